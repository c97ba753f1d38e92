-- The tokenization POST (DESIGN.md section 3) on keep-alive connections, for the `http` suite once
-- the merchant API lands. Each card registration's access key is single-use, so the bench first
-- creates registrations through the API and passes a file of them, one per line:
--   <CardRegistrationURL path>\t<AccessKey>\t<PreregistrationData>
-- as the script arguments with the thread count (wrk -tN ... -s tokenize.lua URL -- FILE N); thread i
-- takes every N-th registration from the i-th, so no access key is used twice.
-- The card is the published Mangopay sandbox test card; a response counts as an error unless it is
-- 200 with a `data=` body.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

local threads = {}
local counter = 0

function setup(thread)
   thread:set("slice", counter)
   counter = counter + 1
   threads[#threads + 1] = thread
end

local registrations = {}
local next_index = 0
local refused = 0

function init(args)
   local all = {}
   for line in io.lines(args[1]) do
      local path, key, data = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
      if path then all[#all + 1] = { path, key, data } end
   end
   local slices = tonumber(args[2]) or 1
   local slice = tonumber(wrk.thread:get("slice")) or 0
   for i = slice + 1, #all, math.max(slices, 1) do registrations[#registrations + 1] = all[i] end
end

function request()
   next_index = next_index + 1
   local r = registrations[(next_index - 1) % #registrations + 1]
   local body = "data=" .. r[3] .. "&accessKeyRef=" .. r[2]
      .. "&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123"
   return wrk.format("POST", r[1], { ["Content-Type"] = "application/x-www-form-urlencoded" }, body)
end

function response(status, headers, body)
   if status ~= 200 or body:sub(1, 5) ~= "data=" then refused = refused + 1 end
   wrk.thread:set("refused", refused)
end

function done(summary, latency, requests)
   local total = 0
   for _, thread in ipairs(threads) do total = total + (tonumber(thread:get("refused")) or 0) end
   report.extra = string.format(',"refused":%d', total)
   report.done(summary, latency, requests)
end
