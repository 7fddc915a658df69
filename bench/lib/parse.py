#!/usr/bin/env python3
"""Parsing and aggregation for bench/run.sh (standard library only).

    parse.py row SCENARIO TARGET TOOL REP RUNDIR CSV TARGET_CPU_S BUSY_CPU_S SERVER_REQS
        parse one run's files (stdout, stderr, time.txt, summary.json) and append a CSV row
    parse.py summary OUTDIR
        print one markdown table per scenario (medians over reps) and write OUTDIR/summary.md
    parse.py get URL        print the body of a GET (readiness checks, /stats); exit 1 on failure
    parse.py server-reqs URL  print the "requests" count of a volley target's /stats, or "nan"

Every tool's numbers come from its own output; CPU and memory come from
/usr/bin/time -f '%e %U %S %M' (wall s, user s, sys s, peak RSS KiB).
"""
import csv
import json
import math
import os
import re
import statistics
import sys
import urllib.request

NAN = float('nan')
OTHER_MAX = float(os.environ.get('OTHER_MAX', '0.5'))  # CPU-s of other work that marks a run as disturbed
MiB = 1024.0 * 1024.0

FIELDS = ['scenario', 'target', 'tool', 'rep', 'exit', 'wall_s', 'user_s', 'sys_s', 'cpu_s',
          'peak_rss_kb', 'responses', 'errors', 'rps', 'mib_s', 'p50_ms', 'p99_ms',
          'req_per_cpu_s', 'target_cpu_s', 'other_cpu_s', 'server_requests', 'note', 'dir']


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


def isnum(x):
    return isinstance(x, float) and not math.isnan(x)


def dur_ms(s):
    """wrk/h2load durations: 540.00us 1.20ms 2.00s 1.50m"""
    m = re.match(r'([\d.]+)\s*(us|ms|s|m)$', s.strip())
    if not m:
        return NAN
    return float(m.group(1)) * {'us': 1e-3, 'ms': 1.0, 's': 1e3, 'm': 6e4}[m.group(2)]


def size_bytes(s):
    """wrk/h2load sizes: 12.34MB 1.00GB 512.00B (binary units)"""
    m = re.match(r'([\d.]+)\s*([KMGT]?)B$', s.strip())
    if not m:
        return NAN
    return float(m.group(1)) * 1024.0 ** ' KMGT'.index(m.group(2) or ' ')


def parse_time(path):
    """Last line of /usr/bin/time -f '%e %U %S %M' (GNU time writes 'Command exited with
    non-zero status N' / 'Command terminated by signal N' before it)."""
    r = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return r
    for line in reversed(lines):
        f = line.split()
        if len(f) == 4 and all(re.match(r'^[\d.]+$', x) for x in f):
            r = dict(wall=float(f[0]), user=float(f[1]), sys=float(f[2]), rss_kb=float(f[3]))
            break
    for line in lines:
        if line.startswith('Command terminated by signal'):
            r['signal'] = line.split()[-1]
    return r


# Each parser returns dict(rps, responses, errors, p50, p99, mib_s, note).

def p_wrk(d):
    out = read(d, 'stdout')
    r = dict(rps=NAN, responses=NAN, errors=0.0, p50=NAN, p99=NAN, mib_s=NAN, note='')
    m = re.search(r'Requests/sec:\s+([\d.]+)', out)
    if m: r['rps'] = float(m.group(1))
    m = re.search(r'(\d+) requests in', out)
    if m: r['responses'] = float(m.group(1))
    m = re.search(r'Transfer/sec:\s+(\S+)', out)
    if m: r['mib_s'] = size_bytes(m.group(1)) / MiB
    m = re.search(r'^\s+50(?:\.000)?%\s+(\S+)', out, re.M)
    if m: r['p50'] = dur_ms(m.group(1))
    m = re.search(r'^\s+99(?:\.000)?%\s+(\S+)', out, re.M)
    if m: r['p99'] = dur_ms(m.group(1))
    m = re.search(r'Non-2xx or 3xx responses:\s+(\d+)', out)
    if m: r['errors'] += float(m.group(1))
    m = re.search(r'Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)', out)
    if m:
        r['errors'] += sum(float(x) for x in m.groups())
        r['note'] = 'socket errors c/r/w/t ' + '/'.join(m.groups())
    return r


def p_oha(d):
    j = json.loads(read(d, 'stdout'))
    s = j.get('summary', {})
    lp = j.get('latencyPercentiles', {})
    codes = {str(k): float(v) for k, v in (j.get('statusCodeDistribution') or {}).items()}
    errs = j.get('errorDistribution') or {}
    # with -z, requests still in flight at the deadline are listed as errors
    # ("aborted due to deadline"); they are not failures of the target.
    real = {k: v for k, v in errs.items() if 'deadline' not in k.lower()}
    bad = sum(v for k, v in codes.items() if not k.startswith(('2', '3')))
    return dict(rps=num(s.get('requestsPerSec')), responses=float(sum(codes.values())),
                errors=float(bad + sum(real.values())),
                p50=num(lp.get('p50')) * 1e3, p99=num(lp.get('p99')) * 1e3,
                mib_s=num(s.get('sizePerSec')) / MiB,
                note='; '.join(f'{k}: {v}' for k, v in real.items())[:200])


def p_k6(d):
    j = json.load(open(os.path.join(d, 'summary.json')))
    m = j['metrics']

    def vals(name):
        x = m.get(name, {})
        return x.get('values', x)

    hr, hd, dr, fl = vals('http_reqs'), vals('http_req_duration'), vals('data_received'), vals('http_req_failed')
    ck = vals('checks')
    note = ''
    if ck:
        note = f"checks {int(num(ck.get('passes', 0)))} ok / {int(num(ck.get('fails', 0)))} failed"
    dropped = vals('dropped_iterations')
    if dropped:
        note += f"; dropped_iterations {int(num(dropped.get('count', 0)))}"
    return dict(rps=num(hr.get('rate')), responses=num(hr.get('count')),
                errors=num(fl.get('passes', 0)),  # http_req_failed: a "pass" is a failed request
                p50=num(hd.get('med')), p99=num(hd.get('p(99)')),
                mib_s=num(dr.get('rate')) / MiB, note=note)


def p_h2load(d):
    out = read(d, 'stdout')
    r = dict(rps=NAN, responses=NAN, errors=0.0, p50=NAN, p99=NAN, mib_s=NAN, note='')
    m = re.search(r'finished in [\d.]+\w*, ([\d.]+) req/s, (\S+)/s', out)
    if m:
        r['rps'] = float(m.group(1))
        r['mib_s'] = size_bytes(m.group(2)) / MiB
    m = re.search(r'requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout', out)
    if m:
        r['responses'] = float(m.group(1))
        r['errors'] = float(m.group(2)) + float(m.group(3)) + float(m.group(4))
    m = re.search(r'time for request:\s+(\S+)\s+(\S+)\s+(\S+)', out)
    if m:  # h2load prints no percentiles without --log-file (too costly at full rate)
        r['note'] = f'mean {dur_ms(m.group(3)):.3f} ms (h2load prints no percentiles)'
    return r


def p_volley(d):
    j = json.loads(read(d, 'stdout'))
    lat = j.get('latency_ms', {})
    status = {str(k): float(v) for k, v in (j.get('status') or {}).items()}
    errs = j.get('errors') or {}
    bad = sum(v for k, v in status.items() if not k.startswith(('2', '3')))
    dur = num(j.get('duration_s'))
    mib = num(j.get('bytes_received')) / dur / MiB if isnum(dur) and dur > 0 else NAN
    note = '; '.join(f'{k}: {v}' for k, v in errs.items())
    om = j.get('open_model')
    if om:  # latency_ms is then measured from the intended start (coordinated omission corrected)
        svc = j.get('service_latency_ms') or {}
        note = (f"target {num(om.get('target_rps')):.0f}/s, achieved {num(om.get('achieved_rps')):.0f}/s, "
                f"missed starts {om.get('missed_starts')}, dropped {om.get('dropped')}, "
                f"service p50/p99 {num(svc.get('p50')):.3f}/{num(svc.get('p99')):.3f} ms; " + note).strip('; ')
    if j.get('interrupted'):
        note = ('interrupted; ' + note).strip('; ')
    return dict(rps=num(j.get('rps')), responses=float(sum(status.values())),
                errors=float(bad + sum(float(v) for v in errs.values())),
                p50=num(lat.get('p50')), p99=num(lat.get('p99')), mib_s=mib, note=note)


PARSERS = dict(wrk=p_wrk, oha=p_oha, k6=p_k6, h2load=p_h2load, volley=p_volley)


def read(d, name):
    try:
        return open(os.path.join(d, name), errors='replace').read()
    except OSError:
        return ''


def cmd_row(scenario, target, tool, rep, d, csv_path, target_cpu, busy_cpu, server_reqs):
    t = parse_time(os.path.join(d, 'time.txt'))
    try:
        r = PARSERS[tool](d)
    except Exception as e:  # a crashed or killed tool: keep the row, say why
        err = read(d, 'stderr').strip().splitlines()
        r = dict(rps=NAN, responses=NAN, errors=NAN, p50=NAN, p99=NAN, mib_s=NAN,
                 note=f'parse failed ({type(e).__name__}: {e}); stderr: {err[-1] if err else ""}'[:300])
    cpu = t.get('user', NAN) + t.get('sys', NAN)
    rc = read(d, 'rc').strip()
    if t.get('signal'):
        rc += f' (signal {t["signal"]})'
    other = num(busy_cpu) - cpu - (num(target_cpu) if isnum(num(target_cpu)) else 0.0)
    row = dict(scenario=scenario, target=target, tool=tool, rep=rep, exit=rc,
               wall_s=t.get('wall', NAN), user_s=t.get('user', NAN), sys_s=t.get('sys', NAN),
               cpu_s=round(cpu, 3), peak_rss_kb=t.get('rss_kb', NAN),
               responses=r['responses'], errors=r['errors'],
               rps=round(r['rps'], 1), mib_s=round(r['mib_s'], 2),
               p50_ms=round(r['p50'], 3), p99_ms=round(r['p99'], 3),
               req_per_cpu_s=round(r['responses'] / cpu) if isnum(cpu) and cpu > 0 and isnum(r['responses']) else NAN,
               target_cpu_s=target_cpu, server_requests=server_reqs,
               other_cpu_s=round(max(other, 0.0), 2),  # clock-tick noise can go below 0
               note=r['note'], dir=d)
    new = not os.path.exists(csv_path)
    with open(csv_path, 'a', newline='') as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerow(row)
    print(f"    {tool:7} rep {rep}: {fmt(row['rps'])} req/s, p50 {fmt(row['p50_ms'], 3)} ms, "
          f"p99 {fmt(row['p99_ms'], 3)} ms, CPU {fmt(row['cpu_s'], 2)} s, "
          f"{fmt(row['req_per_cpu_s'])} req/CPU-s, RSS {fmt(row['peak_rss_kb'] / 1024)} MB, "
          f"errors {fmt(row['errors'], 0)}, exit {rc}{', ' + row['note'] if row['note'] else ''}",
          file=sys.stderr)


def median(xs):
    xs = [x for x in xs if isnum(x)]
    return statistics.median(xs) if xs else NAN


def fmt(x, nd=1):
    if not isinstance(x, float):
        x = num(x)
    if not isnum(x):
        return 'n/a'
    if abs(x) >= 1000:
        return f'{x:,.0f}'
    return f'{x:.{nd}f}'


def fmt_delta(x):
    if not isnum(x):
        return 'n/a'
    return 'exact' if x == 0 else f'{x:+,.0f}'


def summary(outdir):
    lines = []
    hdr = open(os.path.join(outdir, 'header.md')).read().rstrip() if os.path.exists(os.path.join(outdir, 'header.md')) else ''
    if hdr:
        lines.append(hdr)
    order = list(dict.fromkeys(read(outdir, 'scenarios.txt').split())) or \
        sorted(p[:-4] for p in os.listdir(outdir) if p.endswith('.csv'))
    for sc in order:
        p = os.path.join(outdir, sc + '.csv')
        if not os.path.exists(p):
            continue
        rows = list(csv.DictReader(open(p)))
        groups = {}
        for r in rows:
            groups.setdefault((r['target'], r['tool']), []).append(r)
        desc = read(outdir, sc + '.desc').strip()
        lines.append(f'\n### {sc}\n')
        if desc:
            lines.append(desc + '\n')
        lines.append('| target | tool | runs | req/s | MiB/s | p50 ms | p99 ms | CPU-s | req/CPU-s '
                     '| req/CPU-s vs base | peak RSS MB | errors | target CPU-s | other CPU-s (max) | count − server |')
        lines.append('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
        med = {}
        for key, rs in groups.items():
            g = lambda k: median([num(r[k]) for r in rs])
            med[key] = dict(n=len(rs), rps=g('rps'), mib=g('mib_s'), p50=g('p50_ms'), p99=g('p99_ms'),
                            cpu=g('cpu_s'), rpc=g('req_per_cpu_s'), rss=g('peak_rss_kb') / 1024,
                            err=g('errors'), tcpu=g('target_cpu_s'),
                            other=max([num(r['other_cpu_s']) for r in rs if isnum(num(r['other_cpu_s']))] or [NAN]),
                            dcount=median([num(r['responses']) - num(r['server_requests']) for r in rs]),
                            fails=sum(1 for r in rs if not isnum(num(r['rps']))),
                            notes=sorted({r['note'] for r in rs if r['note']}))
        bases = {}  # baseline: wrk on the same target, else the first tool run there
        for (target, tool) in groups:
            if tool == 'wrk' or target not in bases:
                bases[target] = tool
        footnotes = []
        busy = False
        for (target, tool), m in med.items():
            base = med.get((target, bases[target]))
            ratio = m['rpc'] / base['rpc'] if base and isnum(base['rpc']) and base['rpc'] > 0 else NAN
            rs = f'{ratio:.2f}× {bases[target]}' if isnum(ratio) else 'n/a'
            p50 = fmt(m['p50'], 3)
            if not isnum(m['p50']) and tool == 'h2load':
                p50 = 'n/a¹'
            runs = f"{m['n']}" + (f" ({m['fails']} failed)" if m['fails'] else '')
            lines.append(f"| {target} | {tool} | {runs} | {fmt(m['rps'])} | {fmt(m['mib'], 1)} | {p50} | "
                         f"{fmt(m['p99'], 3)} | {fmt(m['cpu'], 2)} | {fmt(m['rpc'])} | {rs} | {fmt(m['rss'])} | "
                         f"{fmt(m['err'], 0)} | {fmt(m['tcpu'], 2)} | {fmt(m['other'], 2)}{' ⚠' if m['other'] > OTHER_MAX else ''} | "
                         f"{fmt_delta(m['dcount'])} |")
            busy = busy or m['other'] > OTHER_MAX
            for n in m['notes']:
                footnotes.append(f'- {target}/{tool}: {n}')
        if any(t == 'h2load' and not isnum(m['p50']) for (_, t), m in med.items()):
            footnotes.insert(0, '- ¹ h2load prints percentiles only with --log-file, which costs CPU '
                                'at full rate; its mean is in the notes.')
        if busy:
            footnotes.insert(0, f'- ⚠ other processes used more than {OTHER_MAX:g} CPU-s during at least one run of '
                                'this row: its numbers are disturbed (rerun on a quieter machine, or with QUIET_WAIT=120).')
        if footnotes:
            lines.append('')
            lines.extend(footnotes[:40])
    text = '\n'.join(lines) + '\n'
    with open(os.path.join(outdir, 'summary.md'), 'w') as f:
        f.write(text)
    return text


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'row':
        cmd_row(*sys.argv[2:12])
    elif cmd == 'summary':
        sys.stdout.write(summary(sys.argv[2]))
    elif cmd == 'get':
        try:
            sys.stdout.write(http_get(sys.argv[2]).decode(errors='replace'))
        except Exception:
            sys.exit(1)
    elif cmd == 'server-reqs':
        try:
            print(json.loads(http_get(sys.argv[2]))['requests'])
        except Exception:
            print('nan')
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
