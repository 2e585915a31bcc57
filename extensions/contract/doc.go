// Package contract checks that a version of the Ray Distributed Debugger
// extension (anyscalecompute.ray-distributed-debugger) still behaves as the
// image assumes, by reading its code: the VSIX's extension/package.json and
// its main script (extension/dist/extension.js, minified by webpack).
//
// The image configures the extension through one setting and the smoke
// probe imitates its requests and its attach, so a version that changes any
// of these would pass verify and smoke image and break every session:
//
//   - package.json's contributes.configuration declares the setting
//     imagespec.SettingClusterDashboards, and the code reads it and takes
//     each entry's host and localRoot ({host, localRoot});
//   - the localRoot defaults with `localRoot ?? "${workspaceFolder}"`, not
//     `||`: the image's localRoot is "" (imagespec.DebuggerLocalRoot), which
//     `??` keeps and `||` replaces;
//   - the attach configuration it starts is {type:"python",
//     request:"attach", connect:{host,port}, justMyCode:false,
//     pathMappings:[{localRoot:L, remoteRoot:"."}, {localRoot:L,
//     remoteRoot:L}]}, L that defaulted localRoot (debug/dap
//     ExtensionAttachArguments);
//   - the State API queries it polls are the ones the probe sends
//     (debug/dashboard PausedWorkersQuery, WorkerQuery, RunningTasksQuery).
//
// The shapes were read from 0.1.6 (ReadFrom), the only version whose code
// the project has seen. Check reports every difference in a sentence naming
// the file, what was found and what the image expects; an equivalent
// rewrite the checker does not recognise (a `??` compiled to a ternary, a
// query built by concatenation) is reported too, for a person to read.
package contract
