-- Direct card pay-ins (POST /v2.01/{ClientId}/payins/card/direct) with the frictionless sandbox card,
-- 10.00 EUR each (3-D Secure frictionless up to 50.00), IpAddress and BrowserInfo given, on one keep-alive
-- connection per wrk thread (wrk -tN -cN). Arguments: CLIENT_ID BEARER_TOKEN FILE, where FILE holds one
-- prepared shopper per line: <UserId>\t<WalletId>\t<CardId>; thread i pays with line i (mod the count), so
-- each connection is one shopper paying into their own wallet. An answer counts as refused unless it is
-- 200 with "Status":"SUCCEEDED".
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup

local path, headers, body
local succeeded, refused = 0, 0

function init(args)
   local shoppers = {}
   for line in io.lines(args[3]) do
      local user, wallet, card = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
      if user then shoppers[#shoppers + 1] = { user, wallet, card } end
   end
   local slice = tonumber(wrk.thread:get("slice")) or 0
   local s = shoppers[slice % #shoppers + 1]
   path = "/v2.01/" .. args[1] .. "/payins/card/direct"
   headers = { ["Authorization"] = "Bearer " .. args[2], ["Content-Type"] = "application/json" }
   body = '{"AuthorId":"' .. s[1] .. '","CreditedWalletId":"' .. s[2] .. '","CardId":"' .. s[3] .. '",'
      .. '"DebitedFunds":{"Currency":"EUR","Amount":1000},"Fees":{"Currency":"EUR","Amount":0},'
      .. '"SecureModeReturnURL":"https://shop.example/return","IpAddress":"203.0.113.' .. (slice % 250 + 1) .. '",'
      .. '"BrowserInfo":{"AcceptHeader":"text/html","JavaEnabled":false,"JavascriptEnabled":true,'
      .. '"Language":"fr-FR","ColorDepth":24,"ScreenHeight":1080,"ScreenWidth":1920,"TimeZoneOffset":-60,'
      .. '"UserAgent":"Mozilla/5.0 (cardvault-bench)"}}'
end

function request()
   return wrk.format("POST", path, headers, body)
end

function response(status, headers, answer)
   if status == 200 and answer:find('"Status":"SUCCEEDED"', 1, true) then
      succeeded = succeeded + 1
      wrk.thread:set("succeeded", succeeded)
   else
      refused = refused + 1
      wrk.thread:set("refused", refused)
      if refused == 1 then wrk.thread:set("sample", status .. " " .. answer:sub(1, 200)) end
   end
end

function done(summary, latency, requests)
   local sample = ""
   for _, thread in ipairs(report.threads) do
      if sample == "" then sample = thread:get("sample") or "" end
   end
   sample = sample:gsub('[%c"\\]', " ")
   report.extra = string.format(',"completed":%d,"refused":%d,"sample":"%s"', report.total("succeeded"),
      report.total("refused"), sample)
   report.done(summary, latency, requests)
end
