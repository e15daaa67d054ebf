-- SPDX-License-Identifier: BSL-1.0
-- wrk script for examples/http_server: POST /orders/<id>/pay with ids cycling over
-- `orders` values, so each order is paid once and every later copy is refused (409).
-- Each wrk thread counts on its own: the threads send the same ids at about the same
-- time, which is the duplicate traffic the service must survive.
--   wrk -t2 -c64 -d10s -s examples/http_server_pay.lua http://127.0.0.1:8080
local orders = tonumber(os.getenv("ORDERS") or "20000")
local n = 0

request = function()
  n = n + 1
  return wrk.format("POST", "/orders/w" .. (n % orders) .. "/pay")
end
