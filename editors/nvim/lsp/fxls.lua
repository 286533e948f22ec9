-- fxls: FX traceability diagnostics, hover, quick fixes, code lens and inlay hints for
-- PyTorch nn.Modules. Neovim 0.11+ config, picked up by `vim.lsp.enable('fxls')` when this
-- folder is on 'runtimepath'. Override anything with `vim.lsp.config('fxls', {...})`.
--
-- The server command is `fxls serve` (fxls must be on PATH). Set vim.g.fxls_cmd before the
-- first Python buffer opens to use another one, e.g.
--   vim.g.fxls_cmd = { '/path/to/.venv/bin/fxls', 'serve' }   -- or a string: '.venv/bin/fxls'
-- (a string is the executable; ' serve' is appended when it has no arguments).

local function server_cmd()
  local cmd = vim.g.fxls_cmd
  if type(cmd) == 'string' and cmd ~= '' then
    return { cmd, 'serve' }
  end
  if type(cmd) == 'table' and #cmd > 0 then
    return cmd
  end
  return { 'fxls', 'serve' }
end

-- Defaults of the server (fxls/server/config.py). Sent as initializationOptions and again
-- as workspace/didChangeConfiguration right after startup (the server applies the later one
-- and re-traces); project settings in [tool.fxls] of pyproject.toml apply underneath them.
local settings = {
  fxls = {
    trace = {
      onSave = true, -- trace the file's modules on open and on save
      onChange = false, -- also trace after a pause in typing (runs your code often)
      timeout = 10, -- seconds one trace of a file may take
    },
    python = '', -- interpreter that runs your model code; '' = the server's own
    diagnostics = {
      select = {}, -- report only these codes/prefixes, e.g. { 'FX00' }; {} = all
      ignore = {}, -- never report these codes/prefixes, e.g. { 'FX013' }
    },
    inlayHints = {
      shapes = true, -- tensor shapes as inlay hints (enable with vim.lsp.inlay_hint.enable())
    },
  },
}

---@type vim.lsp.Config
return {
  cmd = server_cmd(),
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'setup.py', '.git' },
  settings = settings,
  init_options = vim.deepcopy(settings),
  handlers = {
    -- the complete report of a save is in place: keep the tracers it was analysed for
    -- (`:FxlsStatus`), refresh that buffer's code lenses if they are shown, or always with
    -- vim.g.fxls_codelens = true (Neovim 0.11 does not act on the server's
    -- workspace/codeLens/refresh)
    ['fxls/analysisDone'] = function(_, result)
      local bufnr = result and result.uri and vim.fn.bufnr(vim.uri_to_fname(result.uri)) or -1
      if bufnr == -1 or not vim.api.nvim_buf_is_loaded(bufnr) then
        return
      end
      require('fxls').remember_targets(bufnr, result)
      if vim.g.fxls_codelens == true or #vim.lsp.codelens.get(bufnr) > 0 then
        vim.lsp.codelens.refresh({ bufnr = bufnr })
      end
    end,
  },
  -- settings overridden with vim.lsp.config('fxls', { settings = ... }) also go into
  -- initializationOptions, so the very first trace already uses them.
  before_init = function(params, config)
    local fxls = config.settings and config.settings.fxls
    if type(fxls) == 'table' then
      params.initializationOptions = vim.tbl_deep_extend('force',
        params.initializationOptions or {}, { fxls = fxls })
    end
  end,
}
