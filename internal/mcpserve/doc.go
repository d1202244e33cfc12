// Package mcpserve serves the core's MCP tool calls to MCP clients, over
// stdio and over Streamable HTTP on loopback: a transport, deciding
// nothing itself.
package mcpserve
