// An agent on the TypeScript SDK 1.x client that gives up on a tool call after a short timeout: the SDK
// then sends the server `notifications/cancelled` for it, as it does after its default 60 s.
//
//   node impatient_agent.mjs URL TOKEN TOOL ARGUMENTS_JSON TIMEOUT_MS
//
// Prints one JSON line: {"protocol": <negotiated version>, "result": <CallToolResult>} or
// {"protocol": ..., "error": {"code", "message"}}, and stays connected (as an agent that goes on does)
// until its stdin ends.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args, timeout] = process.argv.slice(2);
const client = new Client({ name: "impatient-ts-agent", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const protocol = transport.protocolVersion ?? "unknown";
await client.listTools(); // as agents do first; the console then knows its servers' tools
let line;
try {
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
    timeout: Number(timeout),
  });
  line = { protocol, result };
} catch (error) {
  line = { protocol, error: { code: error.code ?? null, message: String(error.message ?? error) } };
}
process.stdout.write(JSON.stringify(line) + "\n");
process.stdin.resume();
await new Promise((resolve) => process.stdin.on("end", resolve));
await client.close();
