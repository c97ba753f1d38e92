-- The tokenization POST alone with several keep-alive connections per wrk thread (wrk -t2 -c16), the usual
-- wrk set-up, beside tokenize.lua's one thread per connection. Registrations as for tokenize.lua (DIR/slice-<i>,
-- one file per thread); each request takes the thread's next line, so no access key is used twice. Only
-- counts: a 200 `data=` answer is acknowledged (answers cannot be matched to lines with several connections
-- per thread, so the durability check stays with tokenize.lua's line).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup

local registrations = {}
local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
local current = 0
local acked, exhausted = 0, 0

function init(args)
   local slice = tonumber(wrk.thread:get("slice")) or 0
   for line in io.lines(args[1] .. "/slice-" .. slice) do
      local id, path, key, data = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)$")
      if id then registrations[#registrations + 1] = { path, key, data } end
   end
end

function delay()
   if current >= #registrations then return 50 end
   return 0
end

function request()
   if current >= #registrations then
      exhausted = exhausted + 1
      wrk.thread:set("exhausted", exhausted)
      return wrk.format("GET", "/health")
   end
   current = current + 1
   local r = registrations[current]
   return wrk.format("POST", r[1], headers, "data=" .. r[3] .. "&accessKeyRef=" .. r[2]
      .. "&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123")
end

function response(status, headers, body)
   if status == 200 and body:sub(1, 5) == "data=" then
      acked = acked + 1
      wrk.thread:set("acked", acked)
   end
end

function done(summary, latency, requests)
   report.extra = string.format(',"completed":%d,"exhausted":%d', report.total("acked"), report.total("exhausted"))
   report.done(summary, latency, requests)
end
