-- Headless check of the wsp Neovim configuration (run by test/run.sh):
-- filetype detection, tree-sitter parse and highlighter, and the LSP client against a fake
-- server. Exits with status 1 on the first failure.
local here = debug.getinfo(1, 'S').source:sub(2):match('(.*/)') or './'
local harness = dofile(here .. 'harness.lua')
local check = harness.check

local file = os.getenv('WSP_TEST_FILE')
local log = os.getenv('WSP_TEST_LOG')
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == 'wsp', 'filetype of *.wsp is wsp (got ' .. vim.bo[buf].filetype .. ')')
check(vim.bo[buf].commentstring == '// %s', 'commentstring is // %s')

local ok, parser = pcall(vim.treesitter.get_parser, buf, 'wsp')
check(ok, 'tree-sitter parser for wsp loads' .. (ok and '' or (': ' .. tostring(parser))))
if ok then
  local root = parser:parse()[1]:root()
  check(root:type() == 'source_file', 'root node is source_file')
  check(not root:has_error(), 'the fixture parses without ERROR/MISSING nodes')
  local hl = vim.treesitter.highlighter.active[buf]
  check(hl ~= nil, 'tree-sitter highlighter is active')
  local get = vim.treesitter.query.get or vim.treesitter.query.get_query
  local q = get('wsp', 'highlights')
  local n = 0
  if q then
    for _ in q:iter_captures(root, buf, 0, -1) do
      n = n + 1
    end
  end
  check(n > 50, 'highlight query captures nodes (' .. n .. ')')
end

local attached = vim.wait(5000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
check(attached, 'LSP client started the server and received its diagnostics')
local diags = vim.diagnostic.get(buf)
check(diags[1] and diags[1].message == 'fake diagnostic', 'diagnostic message arrives')
local f = io.open(log, 'r')
local seen = f and f:read('*a') or ''
if f then
  f:close()
end
check(seen:find('initialize', 1, true) ~= nil, 'server got initialize')
check(seen:find('textDocument/didOpen', 1, true) ~= nil, 'server got didOpen')

harness.finish('nvim')
