-- Buffer settings for wsp programs, tree-sitter highlighting and the language server.
if vim.b.did_ftplugin_wsp then
  return
end
vim.b.did_ftplugin_wsp = true

vim.bo.commentstring = '// %s'
vim.bo.comments = ':///,://'
vim.bo.expandtab = true
vim.bo.shiftwidth = 4
vim.bo.softtabstop = 4
vim.bo.cindent = false
vim.bo.smartindent = true

local wsp = require('wsp')
local buf = vim.api.nvim_get_current_buf()
if wsp.config.treesitter then
  wsp.start_treesitter(buf)
end
if wsp.config.lsp then
  wsp.start_lsp(buf)
end
