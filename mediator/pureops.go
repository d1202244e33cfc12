package mediator

import (
	"slices"
	"strings"
)

// Pure operations: the steps of a workflow that compute on earlier results
// and touch nothing. Each names what it does, so the audit trail reads like
// the workflow; all of them are decided the same way: allowed, never
// asked, by "class:pure". Two vocabularies name them: the host's own
// categories (code:filter, code:case, code:math, ...) and the JavaScript
// names an agent's code is written in (code:flatMap, code:Object.keys,
// code:Math.round, ...), so a graph built from an agent's JavaScript keeps
// its names in the trail. Whatever the name, the step is a CEL expression:
// the name is a label, never code (docs/permissions.md has the table of
// what each JavaScript name is in CEL).
var pureOperations = []string{
	// The host's categories.
	"code:filter", "code:map", "code:reduce", "code:find", "code:some", "code:every",
	"code:sort", "code:slice", "code:join", "code:split", "code:replace", "code:trim",
	"code:case", "code:substring", "code:pad", "code:keys", "code:values", "code:entries",
	"code:arithmetic", "code:compare", "code:logic", "code:math", "code:access",
	"code:json", "code:convert", "code:expr", "code:computation",
	// JavaScript's array methods.
	"code:flatMap", "code:findIndex", "code:reverse", "code:concat", "code:includes",
	// String methods.
	"code:replaceAll", "code:trimStart", "code:trimEnd", "code:toLowerCase", "code:toUpperCase",
	"code:substr", "code:match", "code:matchAll", "code:padStart", "code:padEnd",
	// Object functions.
	"code:Object.keys", "code:Object.values", "code:Object.entries", "code:Object.fromEntries", "code:Object.assign",
	// Operators, by name.
	"code:add", "code:subtract", "code:multiply", "code:divide", "code:modulo", "code:power",
	"code:equals", "code:not_equals", "code:greater_than", "code:less_than", "code:greater_or_equal", "code:less_or_equal",
	"code:and", "code:or", "code:not",
	// Math.
	"code:Math.round", "code:Math.floor", "code:Math.ceil", "code:Math.abs", "code:Math.min", "code:Math.max",
	"code:Math.sqrt", "code:Math.pow",
	// Property access.
	"code:get_property", "code:get_length", "code:array_access",
	// JSON and conversions.
	"code:JSON.parse", "code:JSON.stringify",
	"code:Number", "code:String", "code:Boolean", "code:Array.from",
}

// unsafeOperations are JavaScript names that can never be a pure step:
// they evaluate code, wait on time or other work, reach the network, or
// write somewhere. A workflow naming one is refused (unsafe_operation),
// not merely unknown: a graph that asks for eval is not a typo.
var unsafeOperations = []string{
	"code:eval", "code:Function", "code:import", "code:require",
	"code:Promise.all", "code:Promise.race", "code:Promise.allSettled", "code:Promise.any", "code:await",
	"code:setTimeout", "code:setInterval",
	"code:fetch", "code:XMLHttpRequest", "code:WebSocket",
}

// unsafePrefixes are whole namespaces that reach outside the step: the
// runtime's process and file APIs, output, and browser storage.
var unsafePrefixes = []string{
	"code:Deno.", "code:process.", "code:console.",
	"code:localStorage.", "code:sessionStorage.", "code:indexedDB.", "code:caches.",
}

// PureOperations returns the names a workflow's pure step may carry, in
// the order documented.
func PureOperations() []string { return slices.Clone(pureOperations) }

// UnsafeOperations returns the names and namespace prefixes (ending in
// ".") refused as unsafe_operation.
func UnsafeOperations() []string {
	return append(slices.Clone(unsafeOperations), unsafePrefixes...)
}

// IsPureOperation reports whether name is one of PureOperations.
func IsPureOperation(name string) bool { return slices.Contains(pureOperations, name) }

// IsUnsafeOperation reports whether name is one UnsafeOperations refuses.
func IsUnsafeOperation(name string) bool {
	if slices.Contains(unsafeOperations, name) {
		return true
	}
	for _, p := range unsafePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
