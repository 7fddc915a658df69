// The `k6/execution` module: live views of the VU, scenario, instance and test.
const V = globalThis.__volley;

const tagStore = {};
const tags = new Proxy(tagStore, {
  set(t, k, v) {
    V.setVuTag(String(k), v);
    t[k] = typeof v === "object" && v !== null ? v : String(v);
    return true;
  },
  deleteProperty(t, k) {
    V.setVuTag(String(k), null);
    delete t[k];
    return true;
  },
});

export const vu = {
  get idInInstance() {
    return V.execInfo().vuId;
  },
  get idInTest() {
    return V.execInfo().vuIdInTest;
  },
  get iterationInInstance() {
    return V.execInfo().vuIter;
  },
  get iterationInScenario() {
    return V.execInfo().vuIter;
  },
  get tags() {
    return tags;
  },
  get metrics() {
    return { tags, metadata: {} };
  },
};

export const scenario = {
  get name() {
    return V.execInfo().scenario;
  },
  get executor() {
    return V.execInfo().executor;
  },
  get startTime() {
    return V.execInfo().startTime;
  },
  get progress() {
    return V.execInfo().progress;
  },
  get iterationInInstance() {
    return V.execInfo().scenarioIter;
  },
  get iterationInTest() {
    return V.execInfo().scenarioIterInTest;
  },
};

export const instance = {
  get vusActive() {
    return V.execInfo().active;
  },
  get vusInitialized() {
    return V.execInfo().initialized;
  },
  get iterationsCompleted() {
    return V.execInfo().completed;
  },
  get iterationsInterrupted() {
    return V.execInfo().interrupted;
  },
  get currentTestRunDuration() {
    return V.execInfo().elapsedMs;
  },
  // Volley's additions: the share of a split test this instance runs.
  get executionSegment() {
    return V.execInfo().segment;
  },
  get executionSegmentSequence() {
    return V.execInfo().sequence;
  },
};

export const test = {
  abort(msg) {
    V.abort(msg === undefined ? undefined : String(msg));
  },
  get options() {
    return V.testOptions();
  },
};

export default { vu, scenario, instance, test };
