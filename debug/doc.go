// Package debug carries a user from a Ray manifest to the line where a Ray
// task is paused, in one call: the library behind `imagectl debug`.
//
// Run takes a manifest (a RayJob, RayCluster or RayService, as a file a
// user keeps), or the name of a RayCluster that already runs, and:
//
//  1. adds the code-server sidecar with package inject (the same code as
//     `imagectl inject`) and the password Secret, unless the Secret exists;
//  2. applies every document server-side with the field manager
//     FieldManager, in one namespace (the kubeconfig context's unless one is
//     given, as kubectl chooses it), remembering what it created;
//  3. waits for the head Pod with progress a person can read (the
//     RayCluster's state, each Pod's phase, image pulls, readiness), and
//     explains what keeps it waiting: an unschedulable Pod and the resource
//     it lacks, an image that cannot be pulled and the node, a container
//     that keeps exiting and its last log lines; --ready-timeout names what it
//     was waiting for;
//  4. port-forwards the head's dashboard and code-server to free local
//     ports through the API server (client-go's port-forward, no kubectl),
//     and waits until code-server answers through its forward;
//  5. for an InteractiveMode RayJob, or a RayCluster given an entrypoint,
//     submits the entrypoint through the Ray Jobs REST API (package
//     rayjobs: the working_dir packaged and uploaded as Ray's own SDK does)
//     and, for the RayJob, sets spec.jobId so KubeRay follows that job;
//  6. reports each paused task as it appears (the State API's workers with
//     paused threads, the task running there, the Pod that owns the
//     worker's IP) and when it resumes, until the job ends or the context
//     is cancelled.
//
// Progress goes to a Reporter as Events (text for a person, one JSON
// object per line for a tool). On cancellation Run stops its port-forwards
// and, with Options.Cleanup, deletes exactly the objects it created, never
// one that existed before.
package debug
