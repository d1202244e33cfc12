// Package mcpgw connects to the MCP servers the person configured and
// lists and calls their tools within bounds; the core decides every call
// before it asks this package to make it.
package mcpgw
