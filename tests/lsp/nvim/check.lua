-- Headless Neovim (>= 0.10) as a real client of tilelang-lsp.
-- Env: LSP_CMD (server command), HINT_LINE (1-based line whose rendered hint is printed).
-- Prints DIAG / HINT / SCREEN lines on stdout; exits non-zero when something never arrived.
local function out(s) io.stdout:write(s .. "\n") end
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start({ name = "tilelang", cmd = vim.split(os.getenv("LSP_CMD"), " "), root_dir = vim.fn.getcwd() },
  { bufnr = buf })
if not id then out("NO_CLIENT"); vim.cmd("cquit 2") end
vim.lsp.inlay_hint.enable(true, { bufnr = buf })

-- NO_DIAG=1: the file is clean, so wait for hints only
if os.getenv("NO_DIAG") ~= "1" and not vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 50) then
  out("NO_DIAGNOSTICS"); vim.cmd("cquit 3")
end
for _, d in ipairs(vim.diagnostic.get(buf)) do
  out(("DIAG %d %s %s"):format(d.lnum + 1, tostring(d.code), (d.message:gsub("\n", " "))))
end

if not vim.wait(60000, function() return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0 end, 50) then
  out("NO_HINTS"); vim.cmd("cquit 4")
end
for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
  local label = h.inlay_hint.label
  if type(label) == "table" then
    local parts = {}
    for _, p in ipairs(label) do parts[#parts + 1] = p.value end
    label = table.concat(parts)
  end
  out(("HINT %d %s"):format(h.inlay_hint.position.line + 1, label))
end

-- what the user sees: put the line at the top of the window and read the screen cells
vim.o.columns = 240
vim.api.nvim_win_set_cursor(0, { tonumber(os.getenv("HINT_LINE")), 0 })
vim.cmd("normal! zt")
vim.cmd("redraw!")
local cells = {}
for col = 1, vim.o.columns do cells[#cells + 1] = vim.fn.screenstring(1, col) end
out("SCREEN " .. table.concat(cells))

local client = vim.lsp.get_client_by_id(id)
client:stop()
vim.wait(3000, function() return client:is_stopped() end, 50)
vim.cmd("qall!")
