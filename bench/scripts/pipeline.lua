-- HTTP/1.1 pipelining for wrk: every write carries DEPTH copies of the request
-- (wrk's method, path, headers and body), sent back to back without waiting.
-- Usage: wrk -s pipeline.lua URL -- DEPTH        (DEPTH defaults to 8)
-- wrk counts every response, but records one latency sample per batch.
local batch

init = function(args)
  local depth = tonumber(args[1]) or 8
  local reqs = {}
  for i = 1, depth do
    reqs[i] = wrk.format()
  end
  batch = table.concat(reqs)
end

request = function()
  return batch
end
