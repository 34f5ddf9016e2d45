// ctxmill-opencode-plugin: context compression, checkpoints and memory for OpenCode (installed by `ctxmill install opencode`).
//
// experimental.chat.messages.transform: each turn's messages go to ctxmill's engine, a long-lived
//   local process (`ctxmill engine`, started here on demand and reused, on a private Unix socket);
//   it runs the pipeline with the session's state and answers with edits to the parts, applied here
//   in place (OpenCode hands this hook fresh copies each turn: its stored session stays whole).
// experimental.session.compacting: the engine writes a checkpoint; its summary and the person's
//   first request (OpenCode drops it at compaction) are added to the summary prompt.
// Only this user's engine is trusted: before each request the socket and its folder are checked
//   (lstat) to be this user's, the folder not a link nor writable by others, the socket a socket;
//   anything else (a folder another user created first in /tmp) is never connected to.
// Fails open: no engine, an engine that is not this user's, an error, or no answer within the time budget, and the messages go out as
// they are. Settings (environment): CTXMILL_BIN (the ctxmill command, default `ctxmill` on PATH, or
// the command in ctxmill-command.json beside this file), CTXMILL_ENGINE_SOCKET, CTXMILL_PLUGIN_TIMEOUT_MS
// (default 5000), CTXMILL_PLUGIN_LOG (a file for one line per hook call), CTXMILL_PLUGIN=0 (off).
import { spawn } from "node:child_process"
import { appendFileSync, existsSync, lstatSync, readFileSync } from "node:fs"
import http from "node:http"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const START_MS = 20000
const RETRY_MS = 60000
const HERE = dirname(fileURLToPath(import.meta.url))

function socketPath() {
  if (process.env.CTXMILL_ENGINE_SOCKET) return process.env.CTXMILL_ENGINE_SOCKET
  const runtime = process.env.XDG_RUNTIME_DIR
  if (runtime && existsSync(runtime)) return join(runtime, "ctxmill", "engine.sock")
  return join(process.env.TMPDIR || "/tmp", `ctxmill-${process.getuid ? process.getuid() : 0}`, "engine.sock")
}

function command() {
  if (process.env.CTXMILL_BIN) return [process.env.CTXMILL_BIN]
  const file = join(HERE, "ctxmill-command.json")
  try {
    const cmd = JSON.parse(readFileSync(file, "utf8")).command
    if (Array.isArray(cmd) && cmd.length && cmd.every((c) => typeof c === "string")) return cmd
  } catch {}
  return ["ctxmill"]
}

function log(entry) {
  const file = process.env.CTXMILL_PLUGIN_LOG
  if (!file) return
  try {
    appendFileSync(file, JSON.stringify({ time: Date.now(), ...entry }) + "\n")
  } catch {}
}

// Why the engine on `sock` is not to be trusted ("" when it is): the socket and its folder must be
// this user's, the folder a real folder (not a link) nobody else can write to. Nobody else can
// then replace the socket between this check and the connection.
function distrust(sock) {
  if (!process.getuid) return ""
  const uid = process.getuid()
  let folder, entry
  try {
    folder = lstatSync(dirname(sock))
    entry = lstatSync(sock)
  } catch {
    return "no engine socket"
  }
  if (!folder.isDirectory()) return `${dirname(sock)} is not a folder (a link?)`
  if (folder.uid !== uid) return `${dirname(sock)} belongs to uid ${folder.uid}`
  if (folder.mode & 0o022) return `${dirname(sock)} is writable by others`
  if (!entry.isSocket() || entry.uid !== uid) return `${sock} is not a socket of this user`
  return ""
}

let refused = ""

// One HTTP request to the engine; resolves to the parsed answer, or null on any failure or timeout
// (and at once when the engine is not this user's, see distrust).
function call(sock, method, path, body, timeoutMs) {
  const why = distrust(sock)
  if (why) {
    if (why !== refused && why !== "no engine socket") log({ hook: "engine", error: `refused: ${why}` })
    refused = why
    return Promise.resolve(null)
  }
  return new Promise((resolve) => {
    let done = false
    const finish = (value) => {
      if (!done) {
        done = true
        clearTimeout(timer)
        resolve(value)
      }
    }
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request(
      { socketPath: sock, path, method, headers: data ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) } : {} },
      (res) => {
        const chunks = []
        res.on("data", (c) => chunks.push(c))
        res.on("end", () => {
          try {
            finish(res.statusCode === 200 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : null)
          } catch {
            finish(null)
          }
        })
        res.on("error", () => finish(null))
      },
    )
    const timer = setTimeout(() => {
      req.destroy()
      finish(null)
    }, timeoutMs)
    req.on("error", () => finish(null))
    if (data) req.write(data)
    req.end()
  })
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// Resolves true once an engine answers on the socket, starting one if none does.
async function startEngine(sock) {
  if (await call(sock, "GET", "/health", undefined, 1000)) return true
  const [bin, ...rest] = command()
  let failed = false
  try {
    const child = spawn(bin, [...rest, "engine", "--socket", sock], { detached: true, stdio: "ignore" })
    child.on("error", (e) => {
      failed = true
      log({ hook: "engine", error: `cannot start ${bin}: ${e.message}` })
    })
    child.on("exit", () => (failed = true)) // a second engine exits 0 at once: the health check decides
    child.unref()
  } catch (e) {
    log({ hook: "engine", error: `cannot start ${bin}: ${e.message}` })
    return false
  }
  const deadline = Date.now() + START_MS
  while (Date.now() < deadline) {
    if (failed) return !!(await call(sock, "GET", "/health", undefined, 1000))
    await sleep(150)
    if (await call(sock, "GET", "/health", undefined, 1000)) return true
  }
  log({ hook: "engine", error: `no engine answered on ${sock} within ${START_MS} ms` })
  return false
}

// What the engine needs of a part: what reaches the model, nothing volatile (times, costs, ids).
function project(part) {
  if (part.type === "text") return { type: "text", text: part.text, synthetic: !!part.synthetic, ignored: !!part.ignored }
  if (part.type === "reasoning") return { type: "reasoning", text: part.text }
  if (part.type === "tool") {
    const s = part.state || {}
    const out = { type: "tool", callID: part.callID, tool: part.tool, status: s.status, input: s.input }
    if (s.status === "completed") out.output = s.output
    if (s.status === "error") out.error = s.error
    return out
  }
  return { type: part.type }
}

function apply(messages, edits) {
  const drops = []
  const notes = []
  for (const e of edits) {
    const part = messages[e.m]?.parts?.[e.p]
    if (e.op === "note") notes.push(e)
    else if (!part) continue
    else if (e.op === "drop") drops.push(e)
    else if (e.op === "text" && part.type === "text") part.text = e.text
    else if (e.op === "output" && part.state?.status === "completed") part.state.output = e.value
    else if (e.op === "error" && part.state?.status === "error") part.state.error = e.value
    else if (e.op === "input" && part.state) part.state.input = e.value
  }
  drops.sort((a, b) => b.m - a.m || b.p - a.p)
  for (const d of drops) messages[d.m].parts.splice(d.p, 1)
  notes.sort((a, b) => b.m - a.m)
  for (const n of notes) {
    const after = messages[n.m]?.info
    const prompt = [...messages.slice(0, n.m + 1)].reverse().find((m) => m.info.role === "user")?.info
    if (!after) continue
    const id = `${after.id}-ctxmill-note`
    messages.splice(n.m + 1, 0, {
      info: { id, sessionID: after.sessionID, role: "user", time: { created: after.time?.created ?? Date.now() },
              agent: prompt?.agent ?? after.agent, model: prompt?.model ?? after.model },
      parts: [{ id: `${id}-text`, sessionID: after.sessionID, messageID: id, type: "text", text: n.text, synthetic: true }],
    })
  }
}

export const CtxmillPlugin = async (ctx) => {
  if (process.env.CTXMILL_PLUGIN === "0") return {}
  const sock = socketPath()
  const budget = Number(process.env.CTXMILL_PLUGIN_TIMEOUT_MS || 5000)
  const directory = ctx.directory || ctx.worktree || process.cwd()
  const windows = {}
  let ready = startEngine(sock)
  let retryAt = 0
  const engineUp = async () => {
    if (Date.now() < retryAt) return false // the engine could not start lately: no wait on every turn
    const up = await Promise.race([ready, sleep(budget).then(() => false)])
    if (!up) {
      // Start it again (it may have stopped while idle), and until then send turns as they are.
      retryAt = Date.now() + RETRY_MS
      ready = startEngine(sock).then((ok) => ((retryAt = ok ? 0 : retryAt), ok))
    }
    return up
  }
  log({ hook: "init", directory, socket: sock })
  return {
    "chat.params": async (input) => {
      const limit = input?.model?.limit?.context
      if (input?.sessionID && Number.isInteger(limit) && limit > 0) windows[input.sessionID] = limit
    },
    "experimental.chat.messages.transform": async (_input, output) => {
      const messages = output?.messages
      if (!Array.isArray(messages) || !messages.length) return
      const sessionID = messages.find((m) => m?.info?.sessionID)?.info.sessionID
      const model = [...messages].reverse().find((m) => m?.info?.model?.modelID)?.info.model.modelID ?? ""
      const started = Date.now()
      if (!sessionID || !(await engineUp())) return log({ hook: "transform", skipped: "engine not up" })
      const answer = await call(sock, "POST", "/opencode/transform", {
        directory, sessionID, model, window: windows[sessionID],
        messages: messages.map((m) => ({ id: m.info.id, role: m.info.role, parts: (m.parts || []).map(project) })),
      }, budget)
      if (!answer || !Array.isArray(answer.edits)) {
        if (!answer) ready = startEngine(sock) // gone (idle, killed): start it again for the next turn
        return log({ hook: "transform", sessionID, skipped: "no answer" })
      }
      try {
        apply(messages, answer.edits)
      } catch (e) {
        return log({ hook: "transform", sessionID, error: String(e) })
      }
      log({ hook: "transform", sessionID, window: windows[sessionID], messages: messages.length, edits: answer.edits.length,
            summary: answer.summary, ms: Date.now() - started })
    },
    "command.execute.before": async (input) => {
      // /checkpoint (installed by ctxmill): the engine checkpoints what it saw of this session last
      if (input?.command !== "checkpoint" || !input.sessionID || !(await engineUp())) return
      const answer = await call(sock, "POST", "/opencode/compacting", { directory, sessionID: input.sessionID },
                                Math.max(budget, 30000))
      log({ hook: "checkpoint", sessionID: input.sessionID, ok: !!answer && !answer.error })
    },
    "experimental.session.compacting": async (input, output) => {
      if (!input?.sessionID || !(await engineUp())) return log({ hook: "compacting", skipped: "engine not up" })
      const answer = await call(sock, "POST", "/opencode/compacting", { directory, sessionID: input.sessionID },
                                Math.max(budget, 30000))
      const context = Array.isArray(answer?.context) ? answer.context.filter((c) => typeof c === "string") : []
      if (Array.isArray(output?.context)) output.context.push(...context)
      log({ hook: "compacting", sessionID: input.sessionID, context: context.length })
    },
  }
}
