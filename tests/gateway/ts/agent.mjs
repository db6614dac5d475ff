// A scripted MCP agent on the TypeScript SDK v2 client (@modelcontextprotocol/client).
//
//   node agent.mjs auto|legacy URL TOKEN [ask]
//
// `auto` negotiates as the SDK can (2026-07-28 when the server speaks it), `legacy` is the SDK's
// default (initialize, 2025-11-25). Connects to URL with `Authorization: Bearer TOKEN`, prints
// {"ready": <protocol version>}, then reads one JSON command per line from stdin and answers each with
// JSON lines on stdout, as tests/servers/sdk1_agent.py does:
//   {"op": "list_tools"}                        -> {"tools": [names]}
//   {"op": "call", "name": N, "arguments": A}   -> {"progress": message} per notification heard, then
//                                                  {"result": <CallToolResult>} or {"error": message}
// With `ask` it declares elicitation (form and URL), sampling and roots: each question it gets (pushed,
// or inside an input_required result) is printed as {"asked": {"message", "mode"}} and answered with the
// next stdin line, {"answer": <ElicitResult>} (what the person at this agent decided); a sampling
// request is answered "Hello." by model "scripted-model", a roots request with file:///home/dev/project.
import readline from "node:readline";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [negotiation, url, token, ask] = process.argv.slice(2);
const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// stdin as a queue of lines, read by the command loop and by the question handler alike.
const pending = [];
const readers = [];
let ended = false;
const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => (readers.length ? readers.shift()(line) : pending.push(line)));
input.on("close", () => {
  ended = true;
  while (readers.length) readers.shift()(null);
});
const nextLine = () =>
  pending.length ? Promise.resolve(pending.shift()) : ended ? Promise.resolve(null) : new Promise((r) => readers.push(r));

const capabilities = ask === "ask" ? { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } : {};
const client = new Client(
  { name: "console-ts-agent", version: "1.0.0" },
  { capabilities, versionNegotiation: { mode: negotiation } },
);
if (ask === "ask") {
  client.setRequestHandler("elicitation/create", async (request) => {
    emit({ asked: { message: request.params.message, mode: request.params.mode ?? "form" } });
    return JSON.parse(await nextLine()).answer;
  });
  client.setRequestHandler("sampling/createMessage", async () => ({
    role: "assistant",
    content: { type: "text", text: "Hello." },
    model: "scripted-model",
  }));
  client.setRequestHandler("roots/list", async () => ({ roots: [{ uri: "file:///home/dev/project" }] }));
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
emit({ ready: client.getNegotiatedProtocolVersion() ?? "unknown" });

// One command at a time, in order: a call's result comes before the next command is read.
for (let raw = await nextLine(); raw !== null; raw = await nextLine()) {
  const command = JSON.parse(raw);
  try {
    if (command.op === "list_tools") {
      const listing = await client.listTools();
      emit({ tools: listing.tools.map((tool) => tool.name) });
    } else if (command.op === "call") {
      const result = await client.callTool(
        { name: command.name, arguments: command.arguments ?? {} },
        {
          onprogress: (progress) => emit({ progress: progress.message ?? null }),
          timeout: 600_000,
          resetTimeoutOnProgress: true,
        },
      );
      emit({ result });
    }
  } catch (error) {
    emit({ error: String(error?.message ?? error) });
  }
}
await client.close();
