// An agent on the TypeScript MCP SDK (@modelcontextprotocol/sdk 1.x) calls a tool through the console's gateway.
//
//   npm install @modelcontextprotocol/sdk
//   CONSOLE_MCP_URL=http://127.0.0.1:8000/mcp CONSOLE_TOKEN=mcpc_... \
//   TOOL=deployer__deploy ARGUMENTS='{"service": "auth-service"}' node gateway_typescript.mjs
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.env.CONSOLE_MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.CONSOLE_TOKEN}` } },
});
const agent = new Client({ name: "example-agent", version: "1.0.0" });
await agent.connect(transport);

const { tools } = await agent.listTools();
console.log("tools:", tools.map((tool) => tool.name).sort().join(" "));

// A call may wait for people. The console tells whom it waits for as progress, at once and then every
// 15 s: with an onprogress callback and resetTimeoutOnProgress, each notice restarts the 60 s timeout,
// and maxTotalTimeout bounds the whole wait (the console holds a request up to 300 s).
const result = await agent.callTool(
  { name: process.env.TOOL, arguments: JSON.parse(process.env.ARGUMENTS ?? "{}") },
  undefined,
  {
    onprogress: ({ message }) => console.log("waiting:", message),
    resetTimeoutOnProgress: true,
    timeout: 60_000,
    maxTotalTimeout: 330_000,
  },
);
const text = result.content.filter((part) => part.type === "text").map((part) => part.text).join("");
console.log(result.isError ? "error:" : "result:", text);
await agent.close();
