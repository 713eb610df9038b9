-- wsp support for Neovim: tree-sitter highlighting from grammar/tree-sitter-wsp and the
-- language server `wsp lsp`. Works with Neovim 0.7 (LSP) and 0.9+ (LSP and tree-sitter).
local M = {}

local uv = vim.loop or vim.uv

--- Defaults; change with require('wsp').setup({...}).
M.config = {
  cmd = { 'wsp', 'lsp' },   -- the language server command
  lsp = true,               -- start the language server in wsp buffers
  treesitter = true,        -- highlight with the tree-sitter grammar
  grammar_dir = nil,        -- defaults to <repo>/grammar/tree-sitter-wsp
  parser_dir = nil,         -- where the compiled parser goes (stdpath('data')/wsp)
  cc = nil,                 -- C compiler; defaults to $CC or cc
}

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
end

local function this_dir()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h')
end

--- The tree-sitter grammar directory (editors/nvim/lua/wsp -> grammar/tree-sitter-wsp).
function M.grammar_dir()
  return M.config.grammar_dir or vim.fn.simplify(this_dir() .. '/../../../../grammar/tree-sitter-wsp')
end

--- The compiled parser's path.
function M.parser_path()
  local dir = M.config.parser_dir or (vim.fn.stdpath('data') .. '/wsp')
  return dir .. '/wsp.so'
end

local function mtime(path)
  local st = uv.fs_stat(path)
  return st and st.mtime.sec or nil
end

--- Compiles src/parser.c and src/scanner.c into a shared library when it is missing or
--- older than the sources (or always with `force`). Returns ok, message.
function M.build_parser(force)
  local g = M.grammar_dir()
  local sources = { g .. '/src/parser.c', g .. '/src/scanner.c' }
  for _, s in ipairs(sources) do
    if not mtime(s) then
      return false, 'wsp: no tree-sitter parser sources at ' .. s
    end
  end
  local out = M.parser_path()
  local built = mtime(out)
  if not force and built and built >= mtime(sources[1]) and built >= mtime(sources[2]) then
    return true, 'wsp: parser is up to date: ' .. out
  end
  vim.fn.mkdir(vim.fn.fnamemodify(out, ':h'), 'p')
  local cc = M.config.cc or os.getenv('CC') or 'cc'
  local cmd = { cc, '-shared', '-fPIC', '-O2', '-I', g .. '/src', sources[1], sources[2], '-o', out }
  local output = vim.fn.system(cmd)
  if vim.v.shell_error ~= 0 then
    return false, 'wsp: building the tree-sitter parser failed (' .. table.concat(cmd, ' ') .. '):\n' .. output
  end
  return true, 'wsp: built ' .. out
end

local function read_file(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local registered = false

--- Loads the parser and the queries of grammar/tree-sitter-wsp/queries. Returns ok, message.
function M.register_treesitter()
  if registered then
    return true, 'registered'
  end
  local ts = vim.treesitter
  if not ts or not (ts.language and (ts.language.add or ts.language.require_language)) and not ts.require_language then
    return false, 'wsp: this Neovim has no tree-sitter support'
  end
  local ok, msg = M.build_parser(false)
  if not ok then
    return false, msg
  end
  local path = M.parser_path()
  -- 0.7-0.10 raise on failure; 0.11+ return nil and a message instead.
  local loaded, res, err
  if ts.language and ts.language.add then
    loaded, res, err = pcall(ts.language.add, 'wsp', { path = path })
  elseif ts.language and ts.language.require_language then
    loaded, res, err = pcall(ts.language.require_language, 'wsp', path)
  else
    loaded, res, err = pcall(ts.require_language, 'wsp', path)
  end
  if not loaded or (res == nil and err ~= nil) then
    return false, 'wsp: cannot load the tree-sitter parser ' .. path .. ': ' .. tostring(loaded and err or res)
  end
  local set = (ts.query.set or ts.query.set_query)
  for _, name in ipairs({ 'highlights', 'locals', 'folds' }) do
    local text = read_file(M.grammar_dir() .. '/queries/' .. name .. '.scm')
    if text then
      local qok, qerr = pcall(set, 'wsp', name, text)
      if not qok then
        return false, 'wsp: query ' .. name .. '.scm: ' .. tostring(qerr)
      end
    end
  end
  registered = true
  return true, 'registered'
end

--- Starts tree-sitter highlighting in `buf` (Neovim 0.8+ has vim.treesitter.start).
function M.start_treesitter(buf)
  local ok, msg = M.register_treesitter()
  if not ok then
    vim.notify_once(msg, vim.log.levels.WARN)
    return false
  end
  if vim.treesitter.start then
    vim.treesitter.start(buf, 'wsp')
  else
    local parser = vim.treesitter.get_parser(buf, 'wsp')
    vim.treesitter.highlighter.new(parser)
  end
  return true
end

local function root_dir(buf)
  local file = vim.api.nvim_buf_get_name(buf)
  local start = file ~= '' and vim.fn.fnamemodify(file, ':p:h') or vim.fn.getcwd()
  local found = vim.fn.finddir('.git', start .. ';')
  if found ~= '' then
    return vim.fn.fnamemodify(found, ':p:h:h')
  end
  return start
end

--- Starts (or reuses) the wsp language server for `buf`.
function M.start_lsp(buf)
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    vim.notify_once(
      'wsp: cannot find `' .. M.config.cmd[1] .. '` for the language server; install it with '
        .. '`cargo install --path compiler/cli` or set require("wsp").setup({ cmd = { "/path/to/wsp", "lsp" } })',
      vim.log.levels.WARN
    )
    return nil
  end
  local cfg = { name = 'wsp', cmd = M.config.cmd, root_dir = root_dir(buf) }
  if vim.lsp.start then
    return vim.lsp.start(cfg, { bufnr = buf })
  end
  -- Neovim 0.7: one client per root, attached by hand.
  M._clients = M._clients or {}
  local id = M._clients[cfg.root_dir]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(cfg)
    M._clients[cfg.root_dir] = id
  end
  if id then
    vim.lsp.buf_attach_client(buf, id)
  end
  return id
end

return M
