package script

import (
	"slices"

	"github.com/agentgate/nmhost/mediator"
)

// methods are the methods a pure step may call on a value, with the
// operation each is named by in the plan and the audit trail: the
// project's pure operations (mediator/pureops.go), plus a few more that
// only read, named by their category.
var methods = map[string]string{
	"filter": "code:filter", "map": "code:map", "reduce": "code:reduce", "reduceRight": "code:reduce",
	"find": "code:find", "findIndex": "code:findIndex", "indexOf": "code:find", "lastIndexOf": "code:find",
	"some": "code:some", "every": "code:every", "includes": "code:includes",
	"sort": "code:sort", "reverse": "code:reverse", "slice": "code:slice", "concat": "code:concat",
	"flatMap": "code:flatMap", "flat": "code:concat", "at": "code:array_access", "push": "code:concat",
	"join": "code:join", "split": "code:split", "replace": "code:replace", "replaceAll": "code:replaceAll",
	"trim": "code:trim", "trimStart": "code:trimStart", "trimEnd": "code:trimEnd",
	"toLowerCase": "code:toLowerCase", "toUpperCase": "code:toUpperCase",
	"substring": "code:substring", "substr": "code:substr", "padStart": "code:padStart", "padEnd": "code:padEnd",
	"startsWith": "code:compare", "endsWith": "code:compare",
	"match": "code:match", "matchAll": "code:matchAll", "toFixed": "code:convert",
}

// mutators change their receiver in place: allowed only on a value the
// step made itself, never on one another step also holds.
var mutators = []string{"sort", "reverse", "push"}

// regexArg are the methods that make a regular expression of a string
// argument.
var regexArg = []string{"match", "matchAll"}

// statics are the functions of the global objects a pure step may call,
// by object, with their operation.
var statics = map[string]map[string]string{
	"Math": {"round": "code:Math.round", "floor": "code:Math.floor", "ceil": "code:Math.ceil", "abs": "code:Math.abs",
		"min": "code:Math.min", "max": "code:Math.max", "sqrt": "code:Math.sqrt", "pow": "code:Math.pow",
		"trunc": "code:math", "sign": "code:math", "log": "code:math", "exp": "code:math"},
	"JSON":   {"parse": "code:JSON.parse", "stringify": "code:JSON.stringify"},
	"Object": {"keys": "code:Object.keys", "values": "code:Object.values", "entries": "code:Object.entries", "fromEntries": "code:Object.fromEntries", "assign": "code:Object.assign"},
	"Array":  {"from": "code:Array.from", "isArray": "code:compare"},
	"Number": {"isInteger": "code:compare", "isFinite": "code:compare", "isNaN": "code:compare"},
}

// constants are the global objects' values a step may read.
var constants = map[string][]string{"Math": {"PI", "E"}, "Number": {"MAX_SAFE_INTEGER", "MIN_SAFE_INTEGER", "EPSILON"}}

// conversions are the global functions a step may call or pass as a
// callback.
var conversions = map[string]string{"Number": "code:Number", "String": "code:String", "Boolean": "code:Boolean",
	"parseInt": "code:convert", "parseFloat": "code:convert", "isNaN": "code:compare", "isFinite": "code:compare"}

// values are global names that are plain values.
var values = []string{"undefined", "NaN", "Infinity"}

// forbiddenProps are property names that reach a prototype, a
// constructor (and through it code from a string) or a function's
// caller: refused wherever they are written.
var forbiddenProps = []string{"__proto__", "constructor", "prototype", "__defineGetter__", "__defineSetter__",
	"__lookupGetter__", "__lookupSetter__", "caller", "callee", "arguments"}

// unsafeName reports whether a global name is one the project refuses in
// pure code outright (eval, Function, fetch, timers, process, ...).
func unsafeName(name string) bool {
	return mediator.IsUnsafeOperation("code:"+name) || mediator.IsUnsafeOperation("code:"+name+".x")
}

func forbiddenProp(name string) bool { return slices.Contains(forbiddenProps, name) }

// opName is a checked operation name: a name outside the project's list
// falls back to code:expr.
func opName(op string) string {
	if mediator.IsPureOperation(op) {
		return op
	}
	return "code:expr"
}
