-- Headless end-to-end check of the wsp Neovim configuration against the real language server
-- (run by test/run.sh when WSP_BIN names a `wsp` binary): open a file with an error, wait for
-- the server's diagnostics, then hover, go to definition, rename and format through Neovim's
-- own LSP client (vim.lsp.buf_request_sync), checking each answer. Works with Neovim 0.7+.
local here = debug.getinfo(1, 'S').source:sub(2):match('(.*/)') or './'
local harness = dofile(here .. 'harness.lua')
local check = harness.check

local function finish()
  harness.finish('nvim (real server)')
end

local file = os.getenv('WSP_TEST_FILE')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == 'wsp', 'filetype of *.wsp is wsp')

-- 1. Diagnostics: the file has one error, `round_robin` without its worker count (E0606).
local function codes()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out, tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)))
  end
  return out
end
local got = vim.wait(20000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
check(got, 'the real server published diagnostics for the opened file')
local diags = vim.diagnostic.get(buf)
check(#diags == 1 and codes()[1] == 'E0606', 'one diagnostic, E0606 (got ' .. table.concat(codes(), ',') .. ')')
check(diags[1] ~= nil and diags[1].lnum == 11, 'the diagnostic is on line 12 (the schedule)')
check(diags[1] ~= nil and diags[1].message:find('round_robin', 1, true) ~= nil, 'the message names round_robin')

local clients = vim.lsp.buf_get_clients(buf)
local n = 0
for _ in pairs(clients) do
  n = n + 1
end
check(n == 1, 'one LSP client attached')

local function request(method, params)
  local res, err = vim.lsp.buf_request_sync(buf, method, params, 10000)
  if not res then
    return nil, err
  end
  for _, r in pairs(res) do
    -- Neovim 0.7-0.9 call the error `error`, 0.10+ `err`.
    local e = r.err or r.error
    if e then
      return nil, e
    end
    return r.result
  end
  return nil, 'no reply'
end

local uri = vim.uri_from_bufnr(buf)
local function at(line, character)
  return { textDocument = { uri = uri }, position = { line = line, character = character } }
end

-- 2. Hover on `double` in the task call (line 10, 0-based 9).
local h, herr = request('textDocument/hover', at(9, 25))
local md = h and h.contents and (h.contents.value or h.contents) or ''
if type(md) ~= 'string' then
  md = vim.inspect(md)
end
check(md:find('kernel double(', 1, true) ~= nil, 'hover shows the kernel signature' .. (herr and (': ' .. vim.inspect(herr)) or ''))
check(md:find('y = 2x on one tile', 1, true) ~= nil, 'hover shows the doc comment')

-- 3. Definition of `X` in the view `X[i]`: its declaration on line 2.
local d = request('textDocument/definition', at(9, 36))
local loc = d and (d.uri and d or d[1])
check(loc ~= nil and loc.uri == uri, 'definition is in the same file')
check(loc ~= nil and loc.range.start.line == 1 and loc.range.start.character == 6, 'definition of X is at 2:7')

-- 4. Rename the kernel `double` to `twice`, applied by Neovim.
local params = at(9, 25)
params.newName = 'twice'
local edit, rerr = request('textDocument/rename', params)
check(edit ~= nil, 'rename answers a workspace edit' .. (rerr and (': ' .. vim.inspect(rerr)) or ''))
if edit then
  vim.lsp.util.apply_workspace_edit(edit, 'utf-16')
end
local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
check(text:find('kernel twice(', 1, true) ~= nil, 'rename changed the declaration')
check(text:find('twice[i](x: X[i]', 1, true) ~= nil, 'rename changed the call')
check(text:find('double', 1, true) == nil, 'no `double` left')
-- A clash is refused with a reason.
params.newName = 'X'
local _, cerr = request('textDocument/rename', params)
check(cerr ~= nil and tostring(cerr.message or cerr):find('already', 1, true) ~= nil,
  'renaming to an existing name is refused (' .. vim.inspect(cerr) .. ')')

-- 5. Formatting: `x*2.0` becomes `x * 2.0`.
local edits, ferr = request('textDocument/formatting', {
  textDocument = { uri = uri },
  options = { tabSize = 4, insertSpaces = true },
})
check(edits ~= nil and #edits >= 1, 'formatting answers edits' .. (ferr and (': ' .. vim.inspect(ferr)) or ''))
if edits then
  vim.lsp.util.apply_text_edits(edits, buf, 'utf-16')
end
text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
check(text:find('    y = x * 2.0', 1, true) ~= nil, 'formatting spaced the operator')

-- 6. Fixing the error (through the buffer, so Neovim sends didChange) clears the diagnostics.
local last = vim.api.nvim_buf_line_count(buf)
for i = 0, last - 1 do
  local l = vim.api.nvim_buf_get_lines(buf, i, i + 1, false)[1]
  if l:find('round_robin)', 1, true) then
    local fixed = l:gsub('round_robin%)', 'round_robin(4))')
    vim.api.nvim_buf_set_lines(buf, i, i + 1, false, { fixed })
  end
end
local cleared = vim.wait(20000, function()
  return #vim.diagnostic.get(buf) == 0
end, 50)
check(cleared, 'after the fix the diagnostics clear')

finish()
