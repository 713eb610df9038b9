-- The check/finish harness shared by check.lua and check_real.lua: `check(cond, what)` prints
-- one ok/FAIL line; `finish(label)` prints the totals and exits Neovim with status 1 if any
-- check failed.
local M = { failures = 0, total = 0 }

function M.check(cond, what)
  M.total = M.total + 1
  if cond then
    io.stdout:write('ok   ' .. what .. '\n')
  else
    io.stdout:write('FAIL ' .. what .. '\n')
    M.failures = M.failures + 1
  end
end

function M.finish(label)
  io.stdout:write(string.format('%s: %d passed, %d failed\n', label, M.total - M.failures, M.failures))
  vim.cmd(M.failures == 0 and 'qall!' or 'cquit! 1')
end

return M
