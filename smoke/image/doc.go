// Package image runs the image imagectl built — each requested platform as
// a container — and proves, one report line per check, what static
// verification cannot:
//
//   - python: the interpreter found on the image's own PATH, started with
//     the image's config Env (nothing hand-set; Docker's default PATH only
//     when the image sets none), is the shipped one at the locked Python
//     version and the platform's machine; ray and debugpy import from the
//     shipped site-packages at exactly the versions of the dev.imagectl.lock
//     label (read with verify.Lock, which also reports labels that disagree);
//     every ELF file under that site-packages is of the platform's machine
//     and every shared object there loads (dlopen, all symbols bound).
//   - debugger: a small script started in the container calls breakpoint()
//     with debugpy listening (as Ray does for a task); the DAP client of
//     imagectl smoke attach (smoke/probe, debug/dap) attaches, sees the stop
//     in the right function and line, continues, and the script exits 0
//     with its result.
//   - post-mortem: the same script makes the calls Ray makes for a task
//     that raises under RAY_DEBUG_POST_MORTEM=1; the probe attaches with
//     probe.WithPostMortem and must see the stop on the exception in the
//     raising function, with debugpy's exceptionInfo.
//   - code-server: where the base carries imagespec.CodeServerBin, the image's
//     entrypoint is started as `docker run` would, code-server must answer
//     GET /healthz on imagespec.CodeServerPort, `code-server --list-extensions
//     --show-versions` (as the service user, with the service's
//     --extensions-dir and --user-data-dir) must equal the locked
//     extensions, and imagespec.SettingsPath must hold the debugger's cluster
//     dashboards, each with localRoot imagespec.DebuggerLocalRoot, and an
//     interpreter path that runs the same interpreter.
//     Without code-server the line says skip, with the reason.
//
// The Runtime interface has two implementations. Runc unpacks the platform
// image (go-containerregistry mutate.Extract: whiteouts applied; names
// that climb out refused; symbolic links resolved inside the root with
// filepath-securejoin; size and entry limits) and runs it with runc in new
// namespaces; its network namespace has only loopback, and the smoke dials
// into it (dialInNetns). A container is created first and its entrypoint
// started only when code-server is to be checked; runc exec joins even a
// created container, so images without a long-running entrypoint need
// nothing more. Docker loads the platform image with `docker load`,
// publishes ports on 127.0.0.1 only, and keeps a container without
// code-server up with a static host binary (imagectl smoke hold). arm64
// runs under QEMU through binfmt_misc in both.
//
// Of every container process's stdout and stderr, and of the entrypoint's
// output (for runc read from a pipe), the smoke keeps a bounded head and
// tail (OutputHead, OutputTail) and marks what it dropped, so an image
// that floods its output costs bounded memory and ends in a failed line
// at the step or boot timeout.
//
// Every container, unpacked root filesystem, loaded image and temporary
// file is removed when the smoke ends, whether it passed, failed or was
// cancelled (SIGINT cancels the context; cleanup runs without it).
package image
