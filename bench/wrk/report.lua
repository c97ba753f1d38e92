-- Shared by every wrk script of the bench: numbers the threads, sums their counters and, after a run,
-- prints one line the bench parses:
--   CARDVAULT-BENCH {"requests":N,"duration_us":D,"errors":E,...,"curve":[{"percentile":P,"micros":M},...]}
-- Latency is wrk's per-request latency (closed loop: each connection waits for its answer).
local report = {}

-- wrk's setup hook for every script (`setup = report.setup`): numbers each thread ("slice": 0, 1, ...)
-- and keeps it, so that a thread's init can take its share of the input and done can read its counters.
report.threads = {}
function report.setup(thread)
   thread:set("slice", #report.threads)
   report.threads[#report.threads + 1] = thread
end

-- The sum over every thread of the counter a thread keeps with wrk.thread:set(name, n).
function report.total(name)
   local sum = 0
   for _, thread in ipairs(report.threads) do sum = sum + (tonumber(thread:get(name)) or 0) end
   return sum
end

local percentiles = { 0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99 }

function report.done(summary, latency, requests)
   local e = summary.errors
   local points = {}
   for _, p in ipairs(percentiles) do
      points[#points + 1] = string.format('{"percentile":%g,"micros":%d}', p, latency:percentile(p))
   end
   local extra = report.extra or ""
   io.write(string.format(
      '\nCARDVAULT-BENCH {"requests":%d,"duration_us":%d,"errors":%d,"connect_errors":%d,' ..
      '"read_errors":%d,"write_errors":%d,"timeouts":%d,"status_errors":%d%s,"curve":[%s]}\n',
      summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status,
      e.connect, e.read, e.write, e.timeout, e.status, extra, table.concat(points, ",")))
end

return report
