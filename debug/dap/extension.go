package dap

// ExtensionAttachArguments is the debug configuration the Ray Distributed
// Debugger extension (0.1.6) starts for a paused task at host:port, given
// the cluster's localRoot setting L: {"name":"Python: Remote Attach",
// "type":"python","request":"attach","connect":{host,port},
// "justMyCode":false,"pathMappings":[{localRoot:L,remoteRoot:"."},
// {localRoot:L,remoteRoot:L}]}. ms-python.debugpy passes the pathMappings
// of a "connect" attach through unchanged; the worker's debugpy applies
// them ("." is the worker's cwd).
func ExtensionAttachArguments(host string, port int, localRoot string) map[string]any {
	return map[string]any{
		"name":       "Python: Remote Attach",
		"type":       "python",
		"request":    "attach",
		"connect":    map[string]any{"host": host, "port": port},
		"justMyCode": false,
		"pathMappings": []any{
			map[string]any{"localRoot": localRoot, "remoteRoot": "."},
			map[string]any{"localRoot": localRoot, "remoteRoot": localRoot},
		},
	}
}
