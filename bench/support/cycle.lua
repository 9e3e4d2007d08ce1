-- wrk script: POST a different body each request, cycling through BODIES (one JSON per line),
-- and print the latency percentiles as one JSON line at the end.
local bodies = {}
local i = 0

function init(args)
  for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
  i = math.random(#bodies)
end

function request()
  i = i % #bodies + 1
  return wrk.format("POST", os.getenv("TARGET_PATH"), {["Content-Type"] = "application/json"}, bodies[i])
end

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "errors": %d, "non2xx": %d, "p50_ms": %.3f, "p99_ms": %.3f}\n',
    summary.requests, summary.duration / 1e6,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
