// An OpenCode plugin that records what its hooks receive (one JSON line per call in
// $E2E_PLUGIN_LOG) and changes what the model is sent, so a test can see both ends:
// - experimental.chat.messages.transform: appends "[e2e-plugin-mark]" to every completed tool
//   output (the stand-in must see it exactly once per result);
// - experimental.session.compacting: pushes "E2E-PLUGIN-CONTEXT" into output.context (it must reach
//   the compaction request).
import { appendFileSync } from "node:fs"

export const E2EProbe = async (ctx) => {
  const log = (o) => appendFileSync(process.env.E2E_PLUGIN_LOG, JSON.stringify(o) + "\n")
  log({ hook: "init", ctxKeys: Object.keys(ctx).sort(), directory: ctx.directory, worktree: ctx.worktree })
  return {
    "experimental.chat.messages.transform": async (input, output, ...rest) => {
      const msgs = output.messages
      log({
        hook: "messages.transform",
        input,
        restArgs: rest.length,
        count: msgs.length,
        sessionIDs: [...new Set(msgs.map((m) => m.info.sessionID))],
        roles: msgs.map((m) => m.info.role),
        infoKeys: msgs.length ? Object.keys(msgs[0].info).sort() : [],
        parts: msgs.map((m) => m.parts.map((p) => p.type + (p.tool ? ":" + p.tool : ""))),
        toolPart: (() => {
          for (const m of msgs) for (const p of m.parts) if (p.type === "tool")
            return { keys: Object.keys(p).sort(), stateKeys: Object.keys(p.state).sort(), status: p.state.status }
          return null
        })(),
      })
      for (const m of msgs)
        for (const p of m.parts)
          if (p.type === "tool" && p.state?.status === "completed" && typeof p.state.output === "string")
            p.state.output += "\n[e2e-plugin-mark]"
    },
    "experimental.session.compacting": async (input, output) => {
      log({ hook: "session.compacting", input, output: JSON.parse(JSON.stringify(output)) })
      output.context.push("E2E-PLUGIN-CONTEXT: the task was to fix add() in app.py")
    },
  }
}
