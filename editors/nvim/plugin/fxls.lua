-- fxls user commands (Neovim 0.11+). The server itself is configured in lsp/fxls.lua and
-- started with vim.lsp.enable('fxls').
--   :FxlsGraph [html|code|table|dot|json] [Class]
--                                             graph of the class around the cursor: html (the
--                                             default) opens the graph page in the browser,
--                                             the others a split (table: <CR> jumps to the
--                                             node's line); on an FX pass: its before/after
--                                             graphs (html) or diff (:FxlsGraph pass [NAME])
--   :FxlsRestart                              restart the tracing worker
--   :FxlsFixAll                               apply all verified safe fixes
--   :FxlsStatus                               the tracers the buffer was analysed for, and why
if vim.g.loaded_fxls then
  return
end
vim.g.loaded_fxls = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('fxls: Neovim 0.11 or newer is needed', vim.log.levels.WARN)
  return
end

vim.api.nvim_create_user_command('FxlsGraph', function(cmd)
  require('fxls').show_graph({ format = cmd.fargs[1] or 'html', class = cmd.fargs[2] })
end, {
  nargs = '*',
  desc = 'fxls: show the FX graph of the nn.Module (or the diff of the FX pass) around the cursor',
  complete = function(lead, line)
    local nargs = #vim.split(vim.trim(line), '%s+') - (line:match('%s$') and 0 or 1)
    local items = {}
    if nargs <= 1 then
      items = require('fxls').formats
    elseif nargs == 2 then
      items = require('fxls').definitions(0)
    end
    return vim.tbl_filter(function(item)
      return vim.startswith(item, lead)
    end, items)
  end,
})

vim.api.nvim_create_user_command('FxlsRestart', function()
  require('fxls').restart()
end, { nargs = 0, desc = 'fxls: restart the tracing worker' })

vim.api.nvim_create_user_command('FxlsFixAll', function()
  require('fxls').fix_all()
end, { nargs = 0, desc = 'fxls: apply all verified safe fixes' })

vim.api.nvim_create_user_command('FxlsStatus', function()
  vim.notify(require('fxls').status() or 'fxls: this buffer has not been analysed yet')
end, { nargs = 0, desc = 'fxls: the tracers the buffer was analysed for, and why' })

require('fxls').register_commands()
