-- fxls helpers for Neovim 0.11+: the FX graph of the module under the cursor (or the graph
-- torch.export or torch.compile made of it) as the interactive graph page in the browser
-- (format `html`) or in a scratch buffer (code, table with a <CR> to jump to each node's
-- source line, dot, json), the before/after diff of the FX pass under it, worker restart,
-- fix-all, the tracers a buffer was analysed for.
-- Used by plugin/fxls.lua (:FxlsGraph, :FxlsRestart, :FxlsFixAll, :FxlsStatus), by the
-- `fxls.showGraph` code lenses and by lsp/fxls.lua's `fxls/analysisDone` handler.
local M = {}

--- graph formats; `html` is the graph page (opened in the browser; for an FX pass its
--- graphs before and after it), `pass` a pass's before/after diff (per graph it ran on)
M.formats = { 'html', 'code', 'table', 'dot', 'json', 'pass' }

--- targets whose graph of a module the server shows in place of its FX graph: export's
--- ATen program, dynamo's subgraphs with the breaks between them
M.targets = { 'export', 'compile' }

local SHOW_GRAPH = 'fxls.showGraph'
local RESTART_WORKER = 'fxls.restartWorker'
local FIX_ALL_KIND = 'source.fixAll.fxls'

local function notify(msg, level)
  vim.notify('fxls: ' .. msg, level or vim.log.levels.INFO)
end

--- The fxls client attached to `bufnr` (default: current buffer); with `any`, else any
--- running fxls client.
---@param bufnr integer?
---@param any boolean?
---@return vim.lsp.Client?
function M.client(bufnr, any)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local clients = vim.lsp.get_clients({ bufnr = bufnr, name = 'fxls' })
  if #clients == 0 and any then
    clients = vim.lsp.get_clients({ name = 'fxls' })
  end
  return clients[1]
end

--- Name of the top-level class enclosing line `lnum` (1-based): the nearest `class X` at or
--- above it, else the first class of the buffer.
---@param bufnr integer
---@param lnum integer
---@return string?
function M.class_at(bufnr, lnum)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local pattern = '^class%s+([%a_][%w_]*)'
  for i = math.min(lnum, #lines), 1, -1 do
    local name = lines[i]:match(pattern)
    if name then
      return name
    end
  end
  for _, line in ipairs(lines) do
    local name = line:match(pattern)
    if name then
      return name
    end
  end
  return nil
end

--- Name of the top-level definition enclosing line `lnum` (1-based): the nearest
--- `class X`, `def X` or `X = ...` at column 0 at or above it (a pass may be any of them).
---@param bufnr integer
---@param lnum integer
---@return string?
function M.definition_at(bufnr, lnum)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, lnum, false)
  for i = #lines, 1, -1 do
    local line = lines[i]
    local name = line:match('^class%s+([%a_][%w_]*)') or line:match('^def%s+([%a_][%w_]*)')
      or line:match('^async%s+def%s+([%a_][%w_]*)') or line:match('^([%a_][%w_]*)%s*=[^=]')
    if name then
      return name
    end
  end
  return nil
end

--- Top-level function and class names of the buffer (completion of :FxlsGraph).
---@param bufnr integer
---@return string[]
function M.definitions(bufnr)
  local names = {}
  for _, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    names[#names + 1] = line:match('^class%s+([%a_][%w_]*)') or line:match('^def%s+([%a_][%w_]*)')
  end
  return names
end

local function set_lines(buf, text)
  vim.bo[buf].modifiable = true
  local lines = vim.split(text, '\n', { plain = true })
  while #lines > 1 and vim.trim(lines[#lines]) == '' do
    table.remove(lines)
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local FILETYPES = { code = 'python', dot = 'dot', json = 'json', pass = 'diff' }

local function buffer_named(name)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  return -1
end

--- Show a `fxls.showGraph` result in a scratch buffer in a split (reused per module+format):
--- a module's graph, or a pass's before/after diff (format `pass`, filetype diff).
---@param result { name: string, status: string, format: string, text: string, target: string? }
---@param base string? folder that the table's relative locations start from
---@return integer bufnr
function M.open_graph(result, base)
  local name = ('fxls://graph/%s.%s'):format(M.graph_name(result), result.format)
  local buf = buffer_named(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = FILETYPES[result.format] or ''
  end
  set_lines(buf, result.text or '')
  vim.b[buf].fxls_graph = { name = result.name, status = result.status, format = result.format,
    base = base }
  if result.format == 'table' then
    vim.keymap.set('n', '<CR>', function()
      M.jump_to_source(buf)
    end, { buffer = buf, desc = "fxls: go to the node's source line" })
  end
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local mods = vim.g.fxls_graph_split or 'vertical'
    vim.cmd((mods ~= '' and mods .. ' ' or '') .. 'sbuffer ' .. buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  if result.format == 'pass' then
    if result.status == 'problem' then
      notify(('%s: the pass has a problem (see the diagnostics at its lines)'):format(result.name),
        vim.log.levels.WARN)
    end
  elseif result.status ~= 'traced' then
    notify(('%s: %s (the graph is what tracing got to)'):format(result.name, result.status),
      vim.log.levels.WARN)
  end
  return buf
end

--- The name a graph is kept under: the module's, with the target whose graph it is
--- (`Net.export`).
---@param result { name: string, target: string? }
---@return string
function M.graph_name(result)
  return result.target and ('%s.%s'):format(result.name, result.target) or result.name
end

--- Where the graph page of `name` is written: `vim.g.fxls_graph_dir`, else
--- stdpath('cache')/fxls/graph.
---@param name string
---@return string
function M.page_path(name)
  local dir = vim.g.fxls_graph_dir or (vim.fn.stdpath('cache') .. '/fxls/graph')
  vim.fn.mkdir(dir, 'p')
  return ('%s/%s.html'):format(dir, name:gsub('[^%w_.-]', '_'))
end

--- Write a graph page (`fxls.showGraph` with the format `html`) and open it in the browser
--- with vim.ui.open (or `vim.g.fxls_graph_open(path)` when set).
---@param result { name: string, status: string, format: string, text: string, target: string? }
---@return string path
function M.open_page(result)
  local path = M.page_path(M.graph_name(result))
  local file = assert(io.open(path, 'w'))
  file:write(result.text)
  file:close()
  local opener = vim.g.fxls_graph_open
  if type(opener) == 'function' then
    opener(path)
  else
    local _, err = vim.ui.open(path)
    if err then
      notify(('graph page written to %s (could not open it: %s)'):format(path, err),
        vim.log.levels.WARN)
      return path
    end
  end
  notify(('%s: graph page %s'):format(result.name, path))
  return path
end

--- In a graph table: the `file:line` of the row under the cursor, the file made absolute
--- against the folder of the file that was analysed.
---@param graph_buf integer
---@return string? file, integer? line
function M.location_at_cursor(graph_buf)
  local text = vim.api.nvim_get_current_line()
  local file, lnum = text:match('(%S+):(%d+)%s*$')
  if not file then
    return nil
  end
  local base = (vim.b[graph_buf].fxls_graph or {}).base
  if base and not file:match('^/') then
    file = base .. '/' .. file
  end
  return vim.fs.normalize(file), tonumber(lnum)
end

--- <CR> in a graph table: open the source line of the node under the cursor, in the window
--- that shows that file, else the previous window.
---@param graph_buf integer
---@return boolean jumped
function M.jump_to_source(graph_buf)
  local file, lnum = M.location_at_cursor(graph_buf)
  if not file then
    notify('no source location on this line')
    return false
  end
  local target
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
    if name ~= '' and vim.fs.normalize(name) == file then
      target = win
      break
    end
  end
  if not target then
    vim.cmd('wincmd p')
    if vim.api.nvim_get_current_buf() == graph_buf then
      vim.cmd('split')
    end
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
  else
    vim.api.nvim_set_current_win(target)
  end
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { math.min(lnum, last), 0 })
  return true
end

--- Ask the server for the graph of `class_name` in `bufnr` and open it.
--- The format `html` writes the graph page and opens it in the browser (on_done gets its
--- path as the third argument); the others open a scratch buffer. With a `target`
--- (`export`, `compile`): the graph that target made of the module instead of its FX graph.
---@param opts { bufnr: integer?, class: string?, format: string?, target: string?, client: vim.lsp.Client?, on_done: fun(err: any, bufnr: integer?, path: string?)? }?
function M.show_graph(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local fmt = opts.format or 'code'
  if fmt == '' then
    fmt = 'code'
  end
  local function fail(msg)
    notify(msg, vim.log.levels.ERROR)
    if opts.on_done then
      opts.on_done(msg, nil)
    end
  end
  if not vim.tbl_contains(M.formats, fmt) then
    return fail(('unknown graph format %q (one of %s)'):format(fmt, table.concat(M.formats, ', ')))
  end
  local target = opts.target ~= '' and opts.target or nil
  if target and not vim.tbl_contains(M.targets, target) then
    return fail(('unknown target %q (one of %s)'):format(target, table.concat(M.targets, ', ')))
  end
  local client = opts.client or M.client(bufnr)
  if not client then
    return fail('no fxls client is attached to this buffer')
  end
  local name = opts.class
  -- at the cursor: the definition around it (a pass gives its before/after view), else
  -- the class around it
  local fallback
  if not name or name == '' then
    local lnum = bufnr == vim.api.nvim_get_current_buf() and vim.api.nvim_win_get_cursor(0)[1]
      or 1
    name = M.definition_at(bufnr, lnum)
    fallback = M.class_at(bufnr, lnum)
    if not name or name == fallback then
      name, fallback = fallback, nil
    end
  end
  if not name then
    return fail('no class in this buffer')
  end
  local function ask(asked, on_error)
    local params = {
      command = SHOW_GRAPH,
      arguments = { vim.uri_from_bufnr(bufnr), asked, fmt, target },
    }
    client:request('workspace/executeCommand', params, function(err, result)
      if err then
        if on_error then
          return on_error()
        end
        return fail(('showGraph %s: %s'):format(asked, err.message or vim.inspect(err)))
      end
      if type(result) ~= 'table' or type(result.text) ~= 'string' then
        return fail(('showGraph %s: unexpected answer %s'):format(asked, vim.inspect(result)))
      end
      if result.format == 'html' then
        local path = M.open_page(result)
        if opts.on_done then
          opts.on_done(nil, nil, path)
        end
        return
      end
      local source = vim.api.nvim_buf_get_name(bufnr)
      local buf = M.open_graph(result, source ~= '' and vim.fs.dirname(source) or nil)
      if opts.on_done then
        opts.on_done(nil, buf)
      end
    end, bufnr)
  end
  ask(name, fallback and function()
    ask(fallback)
  end or nil)
end

--- Restart the server's tracing worker (it re-traces the open files).
---@param bufnr integer?
function M.restart(bufnr)
  local client = M.client(bufnr, true)
  if not client then
    return notify('no fxls client is running', vim.log.levels.ERROR)
  end
  client:request('workspace/executeCommand', { command = RESTART_WORKER, arguments = {} },
    function(err)
      if err then
        notify('restart failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        notify('worker restarted')
      end
    end, bufnr)
end

--- Apply every verified safe fix (code action kind source.fixAll.fxls), synchronously so
--- it can run from BufWritePre. Fixes exist only for the text that was last traced.
---@param bufnr integer?
---@param opts { timeout_ms: integer?, quiet: boolean? }? timeout default 3000 ms; quiet: no
---  messages when there is nothing to apply
---@return boolean applied
function M.fix_all(bufnr, opts)
  opts = opts or {}
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client(bufnr)
  if not client then
    if not opts.quiet then
      notify('no fxls client is attached to this buffer', vim.log.levels.ERROR)
    end
    return false
  end
  local last = math.max(vim.api.nvim_buf_line_count(bufnr) - 1, 0)
  local last_line = vim.api.nvim_buf_get_lines(bufnr, last, last + 1, false)[1] or ''
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = 0, character = 0 },
      ['end'] = { line = last, character = #last_line },
    },
    context = { only = { FIX_ALL_KIND }, diagnostics = {}, triggerKind = 1 },
  }
  local response = client:request_sync('textDocument/codeAction', params,
    opts.timeout_ms or 3000, bufnr)
  if not response or response.err then
    local why = response and response.err and response.err.message or 'timed out'
    if not opts.quiet then
      notify('fix all: ' .. why, vim.log.levels.WARN)
    end
    return false
  end
  for _, action in ipairs(response.result or {}) do
    if action.kind == FIX_ALL_KIND and action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
      return true
    end
  end
  if not opts.quiet then
    notify('no verified safe fixes for this text (save to re-trace)')
  end
  return false
end

--- Keep the tracers the server analysed `bufnr` for, and why (`fxls/analysisDone`'s
--- `targets`, `targetsBecause`), in `vim.b[bufnr].fxls_targets`.
---@param bufnr integer
---@param result table the notification's params
function M.remember_targets(bufnr, result)
  if type(result.targets) ~= 'table' or #result.targets == 0 then
    return
  end
  local because = type(result.targetsBecause) == 'string' and result.targetsBecause or nil
  vim.b[bufnr].fxls_targets = { targets = result.targets, because = because }
end

--- What the buffer was last analysed for, as a status line can show it: `fxls: export,
--- compile (inferred (...))`; nil before the first complete report. `:FxlsStatus` echoes it.
---@param bufnr integer?
---@return string?
function M.status(bufnr)
  local known = vim.b[bufnr or 0].fxls_targets
  if not known then
    return nil
  end
  local text = 'fxls: ' .. table.concat(known.targets, ', ')
  return known.because and ('%s (%s)'):format(text, known.because) or text
end

--- `fxls.showGraph` from a code lens ([uri, className, format] over a module, [uri,
--- passName, 'pass'] over a pass; [uri, className, format, target] for the graph export or
--- compile made) opens the graph or the pass's before/after diff here instead of executing
--- it blindly on the server.
function M.register_commands()
  vim.lsp.commands[SHOW_GRAPH] = function(command, ctx)
    local args = command.arguments or {}
    local bufnr = args[1] and vim.uri_to_bufnr(args[1]) or ctx.bufnr
    M.show_graph({
      bufnr = bufnr,
      class = args[2],
      format = args[3],
      target = args[4],
      client = ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or nil,
    })
  end
end

return M
