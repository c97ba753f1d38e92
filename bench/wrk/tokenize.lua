-- The tokenization POST (DESIGN.md section 3) alone, on one keep-alive connection per wrk thread
-- (wrk -tN -cN). Each card registration's access key is single-use, so the bench first creates
-- registrations (create.lua) and deals them out into one file per thread, DIR/slice-<i>, one per line:
--   <Id>\t<CardRegistrationURL path>\t<AccessKey>\t<PreregistrationData>
-- Argument: DIR. Thread i posts the lines of its file in order, so no access key is used twice.
-- The card is the published Mangopay sandbox card; an answer counts as acknowledged only when it is 200
-- with a `data=` body.
-- For the durability check, each thread reports how far it got (`last`: the number of its lines it has
-- an answer for) and the positions among them that were not acknowledged (`gaps`); since a thread has one
-- connection, an answer always belongs to the last line it sent.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup

local registrations = {}
local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
local current, answered = 0, true
local acked, exhausted = 0, 0
local gaps = {}

function init(args)
   local slice = tonumber(wrk.thread:get("slice")) or 0
   for line in io.lines(args[1] .. "/slice-" .. slice) do
      local id, path, key, data = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)$")
      if id then registrations[#registrations + 1] = { path, key, data } end
   end
end

-- A thread out of registrations waits between its (non-tokenization) requests rather than spin.
function delay()
   if current >= #registrations then return 50 end
   return 0
end

function request()
   if not answered and current > 0 then
      gaps[#gaps + 1] = current
      wrk.thread:set("gaps", table.concat(gaps, ","))
   end
   if current >= #registrations then
      -- out of registrations: never reuse an access key; a request that is not a tokenization instead
      exhausted = exhausted + 1
      wrk.thread:set("exhausted", exhausted)
      return wrk.format("GET", "/health")
   end
   current = current + 1
   answered = false
   local r = registrations[current]
   return wrk.format("POST", r[1], headers, "data=" .. r[3] .. "&accessKeyRef=" .. r[2]
      .. "&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123")
end

function response(status, headers, body)
   if answered then return end
   answered = true
   if status == 200 and body:sub(1, 5) == "data=" then
      acked = acked + 1
      wrk.thread:set("acked", acked)
   else
      gaps[#gaps + 1] = current
      wrk.thread:set("gaps", table.concat(gaps, ","))
   end
   wrk.thread:set("last", current)
end

function done(summary, latency, requests)
   local parts = {}
   for _, thread in ipairs(report.threads) do
      parts[#parts + 1] = string.format('{"slice":%d,"last":%d,"gaps":"%s"}', tonumber(thread:get("slice")) or 0,
         tonumber(thread:get("last")) or 0, thread:get("gaps") or "")
   end
   report.extra = string.format(',"completed":%d,"exhausted":%d,"threads":[%s]', report.total("acked"),
      report.total("exhausted"), table.concat(parts, ","))
   report.done(summary, latency, requests)
end
