-- User commands of the wsp Neovim configuration.
if vim.g.loaded_wsp then
  return
end
vim.g.loaded_wsp = true

vim.api.nvim_create_user_command('WspBuildParser', function()
  local ok, msg = require('wsp').build_parser(true)
  vim.notify(msg, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
end, { desc = 'Compile the wsp tree-sitter parser from grammar/tree-sitter-wsp' })

vim.api.nvim_create_user_command('WspRun', function(args)
  local file = vim.api.nvim_buf_get_name(0)
  local cmd = { require('wsp').config.cmd[1], 'run' }
  for _, a in ipairs(args.fargs) do
    table.insert(cmd, a)
  end
  table.insert(cmd, file)
  vim.cmd('botright split')
  vim.fn.termopen(cmd, { cwd = vim.fn.fnamemodify(file, ':h') })
end, { nargs = '*', desc = 'wsp run the current file in a terminal split' })
