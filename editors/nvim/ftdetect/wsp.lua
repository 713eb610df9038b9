-- *.wsp files are wsp programs. vim.filetype.add serves Neovim 0.8+ (filetype.lua); the
-- autocommand serves 0.7, where filetype.lua is opt-in. `setfiletype` never overrides.
if vim.filetype and vim.filetype.add then
  vim.filetype.add({ extension = { wsp = 'wsp' } })
end
vim.cmd([[autocmd BufRead,BufNewFile *.wsp setfiletype wsp]])
