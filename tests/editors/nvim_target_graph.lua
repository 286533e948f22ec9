-- `:FxlsGraph export` in headless Neovim against a real `fxls serve`:
--   FXLS_E2E_FILE=/tmp/x/net.py FXLS_NVIM_DIR=editors/nvim FXLS_GRAPH_DIR=/tmp/x/pages \
--     nvim --headless --clean -l tests/editors/nvim_target_graph.lua
-- The file's class `Net` targets export alone (a pragma) and has a line `h = self.proj(x)`.
-- Writes the export graph's page to FXLS_GRAPH_DIR (the test reads its nodes) and says each
-- check on stderr; exit code 0 means success.

local t0 = vim.uv.hrtime()

local function log(fmt, ...)
  io.stderr:write(('[nvim-target %5.1fs] %s\n'):format((vim.uv.hrtime() - t0) / 1e9, fmt:format(...)))
end

local function check(ok, fmt, ...)
  if not ok then
    log('FAIL: ' .. fmt, ...)
    vim.cmd('cquit 1')
  end
end

local ok_run, err_run = xpcall(function()
  local file = assert(os.getenv('FXLS_E2E_FILE'), 'FXLS_E2E_FILE is not set')
  vim.g.fxls_graph_dir = assert(os.getenv('FXLS_GRAPH_DIR'), 'FXLS_GRAPH_DIR is not set')
  vim.g.fxls_cmd = vim.split(vim.trim(assert(os.getenv('FXLS_CMD'), 'FXLS_CMD is not set')), '%s+')
  vim.opt.runtimepath:prepend(assert(os.getenv('FXLS_NVIM_DIR'), 'FXLS_NVIM_DIR is not set'))
  vim.cmd('filetype on')
  vim.cmd.runtime('plugin/fxls.lua')

  -- the command completes the targets before the formats, and the formats after a target
  local first = vim.fn.getcompletion('FxlsGraph ', 'cmdline')
  local after = vim.fn.getcompletion('FxlsGraph export ', 'cmdline')
  check(vim.deep_equal(vim.list_slice(first, 1, 3), { 'export', 'compile', 'html' })
    and vim.deep_equal(after, require('fxls').formats),
    ':FxlsGraph completes %s, then after export %s', vim.inspect(first), vim.inspect(after))
  log('ok: :FxlsGraph completes %s, after export %s', table.concat(first, ' '), table.concat(after, ' '))

  vim.lsp.enable('fxls')
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client
  vim.wait(15000, function()
    client = vim.lsp.get_clients({ bufnr = buf, name = 'fxls' })[1]
    return client ~= nil and client.initialized
  end, 50)
  check(client ~= nil and client.initialized, 'fxls client did not start/attach within 15 s')

  -- the complete report (the export tier's included) is in place when the server says so
  check(vim.wait(60000, function()
    return vim.b[buf].fxls_targets ~= nil
  end, 100), 'no fxls/analysisDone within 60 s')
  log('ok: analysed for %s', table.concat(vim.b[buf].fxls_targets.targets, ', '))

  -- the FX graph's answer names the graphs the targets made of the module
  local uri = vim.uri_from_bufnr(buf)
  local fx = client:request_sync('workspace/executeCommand',
    { command = 'fxls.showGraph', arguments = { uri, 'Net', 'code' } }, 20000, buf)
  check(fx and not fx.err and vim.deep_equal(fx.result.graphs, { 'export' }),
    'the FX graph of Net names the graphs %s', vim.inspect(fx))
  log('ok: the FX graph of Net names the graphs export made')

  -- :FxlsGraph export with the cursor in forward: the export graph's page
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find('h = self.proj(x)', 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 8 })
    end
  end
  local opened
  vim.g.fxls_graph_open = function(path)
    opened = path
  end
  vim.cmd('FxlsGraph export')
  check(vim.wait(20000, function()
    return opened ~= nil
  end, 50), ':FxlsGraph export opened no page within 20 s')
  check(vim.endswith(opened, '/Net.export.html'), ':FxlsGraph export wrote %s', opened)
  log('ok: :FxlsGraph export wrote %s', opened)

  -- a target that made no graph of the module says why
  local said
  local notify = vim.notify
  vim.notify = function(msg)
    said = msg
  end
  vim.cmd('FxlsGraph compile')
  vim.wait(20000, function()
    return said ~= nil
  end, 50)
  vim.notify = notify
  check(said and said:find('Net: compile not targeted, no graph to show', 1, true),
    ':FxlsGraph compile said %s', tostring(said))
  log('ok: :FxlsGraph compile says %s', said)
end, debug.traceback)

check(ok_run, 'error: %s', tostring(err_run))
log('all checks passed')
for _, client in ipairs(vim.lsp.get_clients({ name = 'fxls' })) do
  client:stop()
end
vim.wait(3000, function()
  return #vim.lsp.get_clients({ name = 'fxls' }) == 0
end, 50)
vim.cmd('qall!')
