-- fxls user commands (Neovim 0.11+). The server itself is configured in lsp/fxls.lua and
-- started with vim.lsp.enable('fxls').
--   :FxlsGraph [export|compile] [html|code|table|dot|json] [Class]
--                                             graph of the class around the cursor: html (the
--                                             default) opens the graph page in the browser,
--                                             the others a split (table: <CR> jumps to the
--                                             node's line); with export or compile, the graph
--                                             that target made of it (export's ATen program,
--                                             dynamo's subgraphs and their breaks) instead of
--                                             its FX graph; on an FX pass: its before/after
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
  local args = cmd.fargs
  local target = vim.tbl_contains(require('fxls').targets, args[1]) and args[1] or nil
  if target then
    args = vim.list_slice(args, 2)
  end
  require('fxls').show_graph({ format = args[1] or 'html', class = args[2], target = target })
end, {
  nargs = '*',
  desc = "fxls: show the FX graph (or export's, compile's) of the nn.Module around the cursor,"
    .. ' or the diff of the FX pass',
  complete = function(lead, line)
    local fxls = require('fxls')
    local words = vim.split(vim.trim(line), '%s+')
    -- which argument is being typed (1: the first), not counting a target before it
    local position = #words - (line:match('%s$') and 0 or 1)
    local after_target = position >= 2 and vim.tbl_contains(fxls.targets, words[2])
    if after_target then
      position = position - 1
    end
    local items = {}
    if position <= 1 then
      items = after_target and fxls.formats
        or vim.list_extend(vim.list_slice(fxls.targets), fxls.formats)
    elseif position == 2 then
      items = fxls.definitions(0)
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
