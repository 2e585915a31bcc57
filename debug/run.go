package debug

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/docsurl"
)

// Options say what a session does. File and Manifest, or ClusterName, say
// what it debugs.
type Options struct {
	Kube KubeFlags
	// File names the manifest in messages ("-" for standard input);
	// Manifest is its content.
	File     string
	Manifest []byte
	// ClusterName attaches to a RayCluster that runs already: nothing is
	// applied.
	ClusterName string
	// Inject configures the sidecar (inject's options: image, secret name
	// and key, resources, ...).
	Inject []inject.Option
	// Restricted says Inject makes the sidecar restricted already
	// (inject.WithRestricted, WithArbitraryUID). Otherwise a namespace
	// that enforces PodSecurity "restricted" (its label, when the session
	// may read the Namespace) makes it restricted, with a warning saying so.
	Restricted bool
	// SecretName and SecretKey name the password Secret (inject's
	// defaults when empty); they must agree with Inject.
	SecretName, SecretKey string
	// SidecarName is the sidecar's container name (inject.DefaultName when
	// empty).
	SidecarName string
	// WorkingDir is a local directory uploaded as the job's working_dir.
	WorkingDir string
	// Entrypoint replaces the RayJob's spec.entrypoint; for a RayCluster
	// it is what is submitted.
	Entrypoint string
	// Timeout bounds the wait for the head Pod (0: DefaultTimeout).
	Timeout time.Duration
	// Replace deletes an existing RayJob of the same name first.
	Replace bool
	// Prepull applies, before the Ray document, the pre-pull DaemonSet
	// (inject.Prepull, named inject.PrepullName) of the injected
	// manifest's Ray and sidecar images, so that every node pulls them. It
	// is applied like the manifest's documents (and deleted with Cleanup
	// when the session created it); the session does not wait for it.
	Prepull bool
	// Cleanup deletes, on the way out, what the session created.
	Cleanup bool
	// ShowPassword puts the code-server password in the ready event.
	ShowPassword bool
	// Logs reports the job's log lines.
	Logs bool
	// CodeServerPort is the local port of code-server's forward (0: free).
	CodeServerPort int
	// Poll is how often the session asks the State API and the job's
	// status (0: DefaultPoll).
	Poll time.Duration
	// NewJobs makes the Jobs API client for a dashboard URL; nil when the
	// session has nothing to submit.
	NewJobs func(dashboardURL string) (Jobs, error)
	// NewStateAPI makes the State API client (nil: debug/dashboard's).
	NewStateAPI func(dashboardURL string) (StateAPI, error)

	// Local debugs with the user's own VS Code: no sidecar is injected
	// (the manifest is applied as it is; --cluster needs none), and the
	// session serves a dashboard proxy on 127.0.0.1:LocalPort that rewrites
	// each paused worker's address to a local tunnel (package dashproxy,
	// Tunnel).
	Local bool
	// LocalPort is the proxy's port (0: a free one; the CLI's default is
	// DefaultLocalPort).
	LocalPort int
	// LocalRoot is the local directory of the job's files, the localRoot
	// of the attach configurations ("": WorkingDir, else the current
	// directory).
	LocalRoot string
	// WriteLaunch is a launch.json the session keeps up to date with one
	// attach configuration per paused task ("": none).
	WriteLaunch string
}

// Defaults of Options.
const (
	DefaultTimeout = 10 * time.Minute
	DefaultPoll    = 2 * time.Second
)

// Jobs is the part of Ray's Jobs REST API a session uses (package
// rayjobs through the dashboard's port-forward).
type Jobs interface {
	// Submit uploads what RuntimeEnv names locally (working_dir,
	// py_modules) and submits; it returns the submission ID.
	Submit(ctx context.Context, s Submission) (string, error)
	// Status is the job's status (PENDING, RUNNING, STOPPED, SUCCEEDED,
	// FAILED) and message.
	Status(ctx context.Context, id string) (status, message string, err error)
	// Logs is the job's whole log so far.
	Logs(ctx context.Context, id string) (string, error)
}

// Submission is one job to submit.
type Submission struct {
	SubmissionID string
	Entrypoint   string
	RuntimeEnv   map[string]any
}

// Outcome is how a session ended.
type Outcome struct {
	// JobID and JobStatus are the job's, when the session followed one.
	JobID, JobStatus, Message string
}

// Failed reports a job that ended without succeeding.
func (o Outcome) Failed() bool { return o.JobStatus == "FAILED" || o.JobStatus == "STOPPED" }

// ErrNoSidecar is returned (wrapped) when --cluster names a cluster whose
// head Pod has no code-server sidecar.
var ErrNoSidecar = errors.New("the head Pod has no code-server sidecar")

// session is one Run.
type session struct {
	o        Options
	c        *Cluster
	r        Reporter
	target   *unstructured.Unstructured // the Ray document, or the RayCluster of --cluster
	cluster  string                     // the RayCluster's name, once known
	created  []*unstructured.Unstructured
	forwards []*Forward
	headUID  types.UID // the head Pod followed, once ready
	// dashLocal is the local port of the dashboard's forward, once made:
	// the head Pod that replaces a lost one is served on the same ports.
	dashLocal int
	podLines  map[string]string
	readyBy   time.Time // the end of --ready-timeout, once the wait began
	tunnels   *tunnels  // --local

	reportMu sync.Mutex // the Reporter hears one goroutine at a time
}

func (s *session) report(e Event) {
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if e.Namespace == "" {
		e.Namespace = s.c.Namespace
	}
	s.r.Report(e)
}

// Run runs one session: see the package doc. It returns when the job it
// follows ends, or when ctx is done (the Outcome then has no JobStatus).
func Run(ctx context.Context, o Options, r Reporter) (out Outcome, err error) {
	if (o.ClusterName == "") == (o.Manifest == nil) {
		return out, errors.New("debug: give a manifest or a cluster name, not both")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.SecretName == "" {
		o.SecretName = inject.DefaultSecretName
	}
	if o.SecretKey == "" {
		o.SecretKey = inject.DefaultSecretKey
	}
	if o.SidecarName == "" {
		o.SidecarName = inject.DefaultName
	}
	if o.NewStateAPI == nil {
		o.NewStateAPI = func(u string) (StateAPI, error) { return dashboard.New(u) }
	}
	if o.WorkingDir != "" {
		if fi, err := os.Stat(o.WorkingDir); err != nil || !fi.IsDir() {
			return out, fmt.Errorf("--working-dir %s: not a directory", o.WorkingDir)
		}
	}
	c, err := Connect(o.Kube)
	if err != nil {
		return out, err
	}
	s := &session{o: o, c: c, r: r, podLines: map[string]string{}}
	c.OnWarning(func(object, text string) {
		msg := "warning: the API server says: " + text
		if object != "" {
			msg = fmt.Sprintf("warning: the API server says, of %s: %s", object, text)
		}
		s.report(Event{Kind: KindWarning, Object: object, Message: msg})
	})
	if o.Local {
		if err := s.checkAccess(ctx, localAccess); err != nil {
			return out, err
		}
	}
	defer func() {
		for _, f := range s.forwards {
			f.Close()
		}
		s.finish(ctx, err)
	}()
	if o.ClusterName != "" {
		err = s.attach(ctx)
	} else {
		err = s.applyManifest(ctx)
	}
	if err != nil {
		return out, err
	}
	return s.follow(ctx)
}

// finish deletes what the session created (Cleanup) or says what it left.
func (s *session) finish(ctx context.Context, runErr error) {
	if len(s.created) == 0 {
		return
	}
	var left, deleted []string
	if s.o.Cleanup {
		// The user's Ctrl-C cancelled ctx: the clean-up has a minute of
		// its own (a second Ctrl-C exits at once).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for i := len(s.created) - 1; i >= 0; i-- {
			u := s.created[i]
			if err := s.c.Delete(cctx, u); err != nil {
				left = append(left, fmt.Sprintf("%s (delete failed: %v)", ref(u), err))
				continue
			}
			deleted = append(deleted, ref(u))
		}
	} else {
		for _, u := range s.created {
			left = append(left, ref(u))
		}
	}
	msg := "cleanup: deleted what this session created"
	if !s.o.Cleanup {
		msg = fmt.Sprintf("left in namespace %s what this session created (--cleanup deletes it; or kubectl delete -n %s %s)", s.c.Namespace, s.c.Namespace, strings.Join(refsLower(s.created), " "))
	} else if len(left) > 0 {
		msg = "cleanup: some objects could not be deleted"
	}
	s.report(Event{Kind: KindCleanup, Message: msg, Deleted: deleted, Left: left})
}

func refsLower(us []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range us {
		out = append(out, strings.ToLower(u.GetKind())+"/"+u.GetName())
	}
	return out
}

// enforcesRestricted reports whether the session's namespace has the
// label that makes the API server enforce PodSecurity "restricted"; false
// when the Namespace cannot be read (reading it is cluster-scoped RBAC that
// many users lack: they pass --restricted).
func (s *session) enforcesRestricted(ctx context.Context) bool {
	ns, err := s.c.Core.GetNamespace(ctx, s.c.Namespace)
	return err == nil && ns.Labels[inject.PodSecurityEnforceLabel] == "restricted"
}

// reportInjectWarnings reports what inject warns about, as imagectl
// inject prints it: its warnings, and each default image whose tag it did
// not check (--no-resolve, offline), which may not exist (the head Pod
// would then wait in ImagePullBackOff).
func (s *session) reportInjectWarnings(res *inject.Result) {
	for _, w := range res.Warnings {
		s.report(Event{Kind: KindWarning, Message: "warning: " + w})
	}
	for _, u := range res.Unchecked {
		s.report(Event{Kind: KindWarning, Message: "warning: " + s.o.File + ": " + u})
	}
}

// applyManifest injects the sidecar, applies the Secret and the documents.
func (s *session) applyManifest(ctx context.Context) error {
	o := s.o
	res := &inject.Result{Output: o.Manifest}
	if !o.Local {
		opts := o.Inject
		if !o.Restricted && s.enforcesRestricted(ctx) {
			opts = append(slices.Clip(opts), inject.WithRestricted())
			s.report(Event{Kind: KindWarning, Message: fmt.Sprintf("warning: namespace %s enforces PodSecurity \"restricted\" (label %s): the sidecar is restricted, as with --restricted: it runs as the Ray container's user, without sudo (see %s)",
				s.c.Namespace, inject.PodSecurityEnforceLabel, docsurl.InjectHardenedPods)})
		}
		var err error
		if res, err = inject.Apply(ctx, o.File, o.Manifest, opts...); err != nil {
			return err
		}
		s.reportInjectWarnings(res)
	}
	docs, err := ParseDocuments(o.File, res.Output)
	if err != nil {
		return err
	}
	if err := setNamespace(ctx, o.File, docs, s.c.Namespace, s.c.namespaced); err != nil {
		return err
	}
	var targets []Document
	for _, d := range docs {
		if IsRayKind(d.Object) {
			targets = append(targets, d)
		}
	}
	switch len(targets) {
	case 0:
		return fmt.Errorf("%s: %w", o.File, inject.ErrNoRayKind)
	case 1:
	default:
		var names []string
		for _, t := range targets {
			names = append(names, t.String())
		}
		return fmt.Errorf("%s: %d Ray documents (%s): debug follows one; put the others in a file of their own", o.File, len(targets), strings.Join(names, ", "))
	}
	s.target = targets[0].Object
	if err := s.checkSubmission(); err != nil {
		return err
	}
	exists, err := s.existing(ctx, s.target)
	if err != nil {
		return err
	}
	replace := exists && s.target.GetKind() == "RayJob"
	if replace && !o.Replace {
		return fmt.Errorf("%s %s already exists in namespace %s: pass --replace to delete it (and its RayCluster) and create it again, or --cluster NAME to attach to its RayCluster", s.target.GetKind(), s.target.GetName(), s.c.Namespace)
	}
	// What the session applies, in order: the password Secret (unless it
	// exists), the pre-pull DaemonSet, the other documents, the Ray one.
	var secret *unstructured.Unstructured
	if !o.Local {
		if secret, err = s.passwordSecret(ctx); err != nil {
			return err
		}
	}
	var plan []*unstructured.Unstructured
	notes := map[*unstructured.Unstructured]string{}
	if secret != nil {
		plan = append(plan, secret)
	}
	if o.Prepull {
		ds, imgs, err := s.prepull(res.Output)
		if err != nil {
			return err
		}
		plan = append(plan, ds)
		notes[ds] = fmt.Sprintf(": it pulls %s onto every node (not waited for)", strings.Join(append(append([]string{}, imgs.Ray...), imgs.Sidecar), ", "))
	}
	for _, d := range docs {
		if d.Object != s.target {
			plan = append(plan, d.Object)
		}
	}
	plan = append(plan, s.target)
	if err := s.preflight(ctx, plan, replace); err != nil {
		return err
	}
	if replace {
		s.report(Event{Kind: KindWaiting, Object: ref(s.target), Message: fmt.Sprintf("deleting the existing %s (--replace)", ref(s.target))})
		if err := s.c.Delete(ctx, s.target); err != nil {
			return err
		}
		// Deleted in the foreground, it stays until its RayCluster is gone.
		if _, err := s.existing(ctx, s.target); err != nil {
			return err
		}
	}
	if secret == nil && !o.Local {
		s.report(Event{Kind: KindApplied, Object: "Secret/" + s.o.SecretName, Message: fmt.Sprintf("Secret/%s exists in namespace %s: its password is kept", s.o.SecretName, s.c.Namespace)})
	}
	for _, u := range plan {
		if err := s.applyOne(ctx, u, notes[u]); err != nil {
			return err
		}
	}
	return nil
}

// preflight applies every object of plan as a server-side dry run, so that
// what the API server refuses (RBAC, admission, validation, another
// manager's fields) stops the session before it has created anything. A
// RayJob that --replace deletes first is not checked: the dry run would be
// an update of the old one. An object whose namespace does not exist
// (yet) cannot be checked: its apply says so.
func (s *session) preflight(ctx context.Context, plan []*unstructured.Unstructured, replace bool) error {
	for _, u := range plan {
		if replace && u == s.target {
			continue
		}
		err := s.c.DryRunApply(ctx, u)
		if err == nil || apierrors.IsNotFound(err) {
			continue
		}
		return fmt.Errorf("%w (nothing was applied)", err)
	}
	return nil
}

// prepull is the pre-pull DaemonSet of the injected manifest, in the
// session's namespace.
func (s *session) prepull(injected []byte) (*unstructured.Unstructured, inject.PrepullImages, error) {
	imgs, err := inject.ImagesToPrepull(s.o.File, injected)
	if err != nil {
		return nil, imgs, fmt.Errorf("--prepull: %w", err)
	}
	data, err := inject.Prepull(imgs)
	if err != nil {
		return nil, imgs, fmt.Errorf("--prepull: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, imgs, fmt.Errorf("--prepull: the pre-pull DaemonSet: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetNamespace(s.c.Namespace)
	return u, imgs, nil
}

func (s *session) applyOne(ctx context.Context, u *unstructured.Unstructured, note string) error {
	existed, err := s.existing(ctx, u)
	if err != nil {
		return err
	}
	if err := s.c.Apply(ctx, u); err != nil {
		return err
	}
	verb := "configured"
	if !existed {
		verb = "created"
		s.created = append(s.created, u)
	}
	s.report(Event{Kind: KindApplied, Object: ref(u), Created: !existed, Message: fmt.Sprintf("%s %s in namespace %s (server-side, field manager %s)%s", ref(u), verb, s.c.Namespace, FieldManager, note)})
	return nil
}

// existing reports whether u's object exists. One being deleted (it has a
// deletionTimestamp: an earlier session's --cleanup, which deletes a Ray
// object in the foreground so that it stays until its Pods are gone, or a
// kubectl delete whose finalizers have not run yet) is waited for
// (awaitDeletion) and then does not exist: an apply to it would configure
// an object about to vanish, and the session would wait for a head Pod
// that never comes.
func (s *session) existing(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	look := func(ctx context.Context) (bool, types.UID, error) {
		cur, err := s.c.Get(ctx, u)
		if cur == nil {
			return false, "", err
		}
		return true, cur.GetUID(), nil
	}
	for {
		cur, err := s.c.Get(ctx, u)
		if err != nil || cur == nil {
			return false, err
		}
		if cur.GetDeletionTimestamp() == nil {
			return true, nil
		}
		if err := s.awaitDeletion(ctx, ref(u), cur, look, "or rename it in the manifest"); err != nil {
			return false, err
		}
		// Gone, or created again since (another UID): look again.
	}
}

// awaitDeletion waits, up to --ready-timeout, for obj (what, Kind/name),
// which is being deleted, to go, reading it through look (pollGone); a
// waiting event names its finalizers. The error says whether the wait was
// interrupted, whether its last looks failed, or that obj is still there,
// with what to do (kubectl get, then instead).
func (s *session) awaitDeletion(ctx context.Context, what string, obj metav1.Object, look func(context.Context) (bool, types.UID, error), instead string) error {
	since := "since " + obj.GetDeletionTimestamp().UTC().Format(time.RFC3339)
	if f := obj.GetFinalizers(); len(f) > 0 {
		since += ", finalizers " + strings.Join(f, ", ")
	}
	s.report(Event{Kind: KindWaiting, Object: what, Message: fmt.Sprintf("%s is being deleted (%s): waiting for it to go before creating it again", what, since)})
	wctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	err := pollGone(wctx, obj.GetUID(), look)
	var le *LookError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for %s to be deleted: %w", what, context.Cause(ctx))
	case errors.As(err, &le):
		return fmt.Errorf("waiting %s for %s in namespace %s to be deleted (%s): %w", s.o.Timeout, what, s.c.Namespace, since, err)
	}
	kind, name, _ := strings.Cut(what, "/")
	return fmt.Errorf("%s in namespace %s is still being deleted after %s (%s): wait until kubectl get %s %s -n %s finds none, %s",
		what, s.c.Namespace, s.o.Timeout, since, strings.ToLower(kind), name, s.c.Namespace, instead)
}

// checkSubmission refuses what cannot be submitted: a working_dir or an
// entrypoint for a RayJob that KubeRay submits itself.
func (s *session) checkSubmission() error {
	switch s.target.GetKind() {
	case "RayJob":
		mode, _, _ := unstructured.NestedString(s.target.Object, "spec", "submissionMode")
		if mode == "InteractiveMode" {
			if s.entrypoint() == "" {
				return fmt.Errorf("%s: %s has no spec.entrypoint: give one after --", s.o.File, ref(s.target))
			}
			return nil
		}
		if mode == "" {
			mode = "K8sJobMode"
		}
		if s.o.WorkingDir != "" || s.o.Entrypoint != "" {
			return fmt.Errorf("%s: %s has submissionMode %s: KubeRay submits its spec.entrypoint itself, so --working-dir and an entrypoint after -- cannot be used (set submissionMode: InteractiveMode, or put the working_dir in spec.runtimeEnvYAML)", s.o.File, ref(s.target), mode)
		}
	case "RayService":
		if s.o.WorkingDir != "" || s.o.Entrypoint != "" {
			return fmt.Errorf("%s: %s: a RayService runs its serveConfigV2; --working-dir and an entrypoint after -- are for a RayJob in InteractiveMode or a RayCluster", s.o.File, ref(s.target))
		}
	case "RayCluster":
		if s.o.WorkingDir != "" && s.o.Entrypoint == "" {
			return fmt.Errorf("%s: --working-dir without an entrypoint: give the command to run after --", s.o.File)
		}
	}
	return nil
}

// submits reports whether the session submits the entrypoint itself.
func (s *session) submits() bool {
	if s.target == nil {
		return s.o.Entrypoint != ""
	}
	switch s.target.GetKind() {
	case "RayJob":
		mode, _, _ := unstructured.NestedString(s.target.Object, "spec", "submissionMode")
		return mode == "InteractiveMode"
	case "RayCluster":
		return s.o.Entrypoint != ""
	}
	return false
}

func (s *session) entrypoint() string {
	if s.o.Entrypoint != "" {
		return s.o.Entrypoint
	}
	if s.target == nil {
		return ""
	}
	e, _, _ := unstructured.NestedString(s.target.Object, "spec", "entrypoint")
	return e
}

// passwordSecret is the password Secret to create, or nil when it exists
// with its key (its password is then kept). A Secret being deleted (an
// earlier session's --cleanup) is waited for (awaitDeletion) and then
// created again: kept, it would vanish under the sidecar that reads it.
func (s *session) passwordSecret(ctx context.Context) (*unstructured.Unstructured, error) {
	what := "Secret/" + s.o.SecretName
	look := func(ctx context.Context) (bool, types.UID, error) {
		sec, err := s.c.Core.GetSecret(ctx, s.c.Namespace, s.o.SecretName)
		switch {
		case apierrors.IsNotFound(err):
			return false, "", nil
		case err != nil:
			return false, "", err
		}
		return true, sec.UID, nil
	}
	sec, err := s.c.Core.GetSecret(ctx, s.c.Namespace, s.o.SecretName)
	for err == nil && sec.DeletionTimestamp != nil {
		if err := s.awaitDeletion(ctx, what, sec, look, "or name another Secret (--secret-name)"); err != nil {
			return nil, err
		}
		sec, err = s.c.Core.GetSecret(ctx, s.c.Namespace, s.o.SecretName)
	}
	switch {
	case err == nil:
		if _, ok := sec.Data[s.o.SecretKey]; !ok {
			return nil, fmt.Errorf("the Secret %s in namespace %s exists without the key %q the sidecar reads its password from: add the key or name another Secret (--secret-name)", s.o.SecretName, s.c.Namespace, s.o.SecretKey)
		}
		return nil, nil
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("get Secret %s in namespace %s: forbidden (debug reads the password Secret; ask for \"get\" on secrets in namespace %q): %w", s.o.SecretName, s.c.Namespace, s.c.Namespace, err)
	default:
		return nil, fmt.Errorf("get Secret %s in namespace %s: %w", s.o.SecretName, s.c.Namespace, err)
	}
	ps, err := inject.PasswordSecret(s.o.File, nil, s.c.Namespace, s.o.Inject...)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(ps.Doc, &m); err != nil {
		return nil, fmt.Errorf("the password Secret: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetNamespace(s.c.Namespace)
	return u, nil
}

// attach finds the RayCluster of --cluster and checks its head has the
// sidecar.
func (s *session) attach(ctx context.Context) error {
	rc, err := s.c.Dynamic.Resource(RayClusters).Namespace(s.c.Namespace).Get(ctx, s.o.ClusterName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("RayCluster %s not found in namespace %s (the namespace came from the %s; pass -n)", s.o.ClusterName, s.c.Namespace, s.c.NamespaceFrom)
		}
		return fmt.Errorf("get RayCluster %s in namespace %s: %w", s.o.ClusterName, s.c.Namespace, err)
	}
	if dt := rc.GetDeletionTimestamp(); dt != nil {
		return fmt.Errorf("RayCluster %s in namespace %s is being deleted (since %s): there is nothing to attach to", rc.GetName(), s.c.Namespace, dt.UTC().Format(time.RFC3339))
	}
	s.target, s.cluster = rc, rc.GetName()
	if s.o.Local {
		s.report(Event{Kind: KindApplied, Object: ref(rc), Message: fmt.Sprintf("RayCluster %s: attaching from this machine (--local): nothing to apply", rc.GetName())})
		return nil
	}
	containers, _, _ := unstructured.NestedSlice(rc.Object, "spec", "headGroupSpec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == s.o.SidecarName {
			s.report(Event{Kind: KindApplied, Object: ref(rc), Message: fmt.Sprintf("RayCluster %s has the %s sidecar: nothing to apply", rc.GetName(), s.o.SidecarName)})
			return nil
		}
	}
	return fmt.Errorf("RayCluster %s in namespace %s: %w: add it to the manifest the cluster came from (imagectl inject -f FILE -i) and apply it (KubeRay then recreates the head Pod), or run imagectl debug -f FILE", rc.GetName(), s.c.Namespace, ErrNoSidecar)
}

// follow waits for the head, forwards its ports, submits, and reports.
// When the head Pod is gone (deleted, evicted, replaced) and the session
// follows no job yet, it waits for the head Pod KubeRay makes instead and
// serves it on the same local addresses; a job ran on the head it lost,
// so a session that follows one ends (with the job's status when KubeRay
// reports one).
func (s *session) follow(ctx context.Context) (Outcome, error) {
	replaced := ""
	for {
		out, err := s.followHead(ctx, replaced)
		var gone *headGoneError
		if !errors.As(err, &gone) {
			return out, err
		}
		for _, f := range s.forwards {
			f.Close()
		}
		s.forwards = nil
		if out.JobID == "" && s.targetIs("RayJob") {
			// KubeRay may have submitted before the session read it.
			out.JobID = s.rayJobID(ctx)
		}
		if out.JobID != "" {
			return s.jobAfterHeadGone(ctx, out, gone)
		}
		if err := s.clusterStays(ctx, gone); err != nil {
			return out, err
		}
		if s.tunnels != nil && s.o.WriteLaunch != "" {
			// The tasks' tunnels closed with the head's proxy.
			if err := writeLaunch(s.o.WriteLaunch, nil, s.localRoot()); err != nil {
				s.report(Event{Kind: KindWarning, Message: "warning: " + err.Error()})
			}
		}
		at := "the same local addresses"
		if s.o.Local {
			at = "the same address"
		}
		msg := fmt.Sprintf("warning: %v: waiting for the head Pod KubeRay makes instead, to serve it on %s", gone, at)
		if len(gone.Paused) > 0 {
			msg += fmt.Sprintf("; no longer followed: %s (a task still paused is reported again from the new head)", strings.Join(gone.Paused, "; "))
		}
		s.report(Event{Kind: KindWarning, Pod: gone.Pod, Message: msg})
		if s.targetIs("RayService") {
			// An upgrade replaces the RayService's RayCluster: look
			// again for the one it serves.
			s.cluster = ""
		}
		replaced = gone.Pod
	}
}

// targetIs reports whether the session's Ray object is of kind.
func (s *session) targetIs(kind string) bool {
	return s.target != nil && s.target.GetKind() == kind
}

// headGoneError is a head Pod gone while the session followed it.
type headGoneError struct {
	Pod, Cluster, Why string
	// Paused are the tasks the session had reported paused and not
	// resumed, when the watch ended on the loss.
	Paused []string
}

func (e *headGoneError) Error() string {
	return fmt.Sprintf("head Pod %s of RayCluster %s is gone (%s)", e.Pod, e.Cluster, e.Why)
}

// headGone reports the session's head Pod when it is gone for good:
// deleted, being deleted, ended, or replaced by a new Pod of the same name
// (another UID: KubeRay can name every head <cluster>-head); nil while it
// runs or when the look fails (the next look decides).
func (s *session) headGone(ctx context.Context, pod string) *headGoneError {
	p, err := s.c.Core.GetPod(ctx, s.c.Namespace, pod)
	return s.headGoneOf(pod, p, err)
}

// headGoneOf is headGone for a look at the head Pod already made.
func (s *session) headGoneOf(pod string, p *corev1.Pod, err error) *headGoneError {
	replaced := err == nil && s.headUID != "" && p.UID != s.headUID
	if !replaced && !podGone(p, err) {
		return nil
	}
	why := "not found"
	switch {
	case err != nil:
	case replaced:
		why = "replaced by a new Pod of the same name"
	case p.DeletionTimestamp != nil:
		why = "being deleted since " + p.DeletionTimestamp.UTC().Format(time.RFC3339)
	default:
		why = "it ended: phase " + string(p.Status.Phase)
		if p.Status.Reason != "" {
			why += ", " + p.Status.Reason
		}
	}
	return &headGoneError{Pod: pod, Cluster: s.cluster, Why: why}
}

// jobAfterHeadGone ends a session whose job's head Pod is gone: with the
// job's end when KubeRay reports one for the RayJob, else with the loss.
func (s *session) jobAfterHeadGone(ctx context.Context, out Outcome, gone *headGoneError) (Outcome, error) {
	if s.targetIs("RayJob") {
		rj, err := s.c.Dynamic.Resource(RayJobs).Namespace(s.c.Namespace).Get(ctx, s.target.GetName(), metav1.GetOptions{})
		if err == nil {
			status, _, _ := unstructured.NestedString(rj.Object, "status", "jobStatus")
			id, _, _ := unstructured.NestedString(rj.Object, "status", "jobId")
			msg, _, _ := unstructured.NestedString(rj.Object, "status", "message")
			if terminal(status) && (out.JobID == "" || id == out.JobID) {
				out.JobID, out.JobStatus, out.Message = id, status, msg
				s.report(Event{Kind: KindFinished, JobID: id, JobStatus: status, Message: fmt.Sprintf("job %s %s (as RayJob %s reports; its head Pod %s is gone): %s", id, strings.ToLower(status), s.target.GetName(), gone.Pod, msg)})
				return out, nil
			}
		}
	}
	job := "the job"
	if out.JobID != "" {
		job = "job " + out.JobID
	}
	// Ray's job manager places a job's supervisor, which runs its
	// driver, on the head node unless the entrypoint asks for resources
	// (job_manager.py, _get_scheduling_strategy).
	return out, fmt.Errorf("%w, and %s ran on it (Ray runs a job's driver on the head node unless its entrypoint asks for resources): the session ends here", gone, job)
}

// clusterStays checks, after its head Pod is gone, that the RayCluster
// (or the RayService, which makes RayClusters) is still there to make
// another. A failed look is no answer: the head wait that follows looks
// again, and ends on its own error.
func (s *session) clusterStays(ctx context.Context, gone *headGoneError) error {
	if s.targetIs("RayService") {
		rs, err := s.c.Dynamic.Resource(RayServices).Namespace(s.c.Namespace).Get(ctx, s.target.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w, and RayService %s was deleted: there is nothing left to follow", gone, s.target.GetName())
		case err == nil && rs.GetDeletionTimestamp() != nil:
			return fmt.Errorf("%w, and RayService %s is being deleted (since %s): there is nothing left to follow", gone, s.target.GetName(), rs.GetDeletionTimestamp().UTC().Format(time.RFC3339))
		}
	}
	if gone.Cluster == "" {
		return nil
	}
	rc, err := s.c.Dynamic.Resource(RayClusters).Namespace(s.c.Namespace).Get(ctx, gone.Cluster, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if s.targetIs("RayService") {
			return nil // an upgrade's old cluster: look for the new one
		}
		return fmt.Errorf("%w, and RayCluster %s was deleted: there is nothing left to follow", gone, gone.Cluster)
	case err != nil:
		return nil
	case rc.GetDeletionTimestamp() != nil && !s.targetIs("RayService"):
		return fmt.Errorf("%w, and RayCluster %s is being deleted (since %s): there is nothing left to follow", gone, gone.Cluster, rc.GetDeletionTimestamp().UTC().Format(time.RFC3339))
	}
	return nil
}

// followHead waits for a head Pod, forwards its ports (on the local ports
// of the head it replaces, if any), submits, and reports, until the job
// ends, ctx is done, or the head Pod is gone (*headGoneError).
func (s *session) followHead(ctx context.Context, replaced string) (Outcome, error) {
	var out Outcome
	head, err := s.waitHead(ctx)
	if err != nil {
		return out, err
	}
	s.headUID = head.UID
	dashPort, csPort := s.ports(head)
	dashLocal := s.dashLocal
	if s.o.Local {
		dashLocal = 0 // only the session's proxy uses it
	}
	dash, err := s.c.PortForward(ctx, head.Name, dashPort, dashLocal)
	if err != nil {
		if gone := s.headGone(ctx, head.Name); gone != nil {
			return out, gone
		}
		return out, err
	}
	s.dashLocal = dash.LocalPort
	s.forwards = append(s.forwards, dash)
	readyMsg := fmt.Sprintf("head Pod %s is ready", head.Name)
	if replaced != "" {
		readyMsg += fmt.Sprintf(" (it replaces %s)", replaced)
	}
	if s.o.Local {
		return s.followLocal(ctx, head, dash, readyMsg)
	}
	cs, err := s.c.PortForward(ctx, head.Name, csPort, s.o.CodeServerPort)
	if err != nil {
		if gone := s.headGone(ctx, head.Name); gone != nil {
			return out, gone
		}
		return out, err
	}
	if cs, err = s.waitCodeServer(ctx, cs); err != nil {
		return out, err
	}
	s.forwards = append(s.forwards, cs)
	s.o.CodeServerPort = cs.LocalPort
	ready := Event{
		Kind: KindReady, Pod: head.Name,
		CodeServerURL: "http://" + cs.Addr() + "/",
		DashboardURL:  "http://" + dash.Addr(),
		Secret:        fmt.Sprintf("%s/%s, key %s", s.c.Namespace, s.o.SecretName, s.o.SecretKey),
		Message:       fmt.Sprintf("%s: code-server at http://%s/", readyMsg, cs.Addr()),
	}
	if s.o.ShowPassword {
		sec, err := s.c.Core.GetSecret(ctx, s.c.Namespace, s.o.SecretName)
		if err != nil {
			return out, fmt.Errorf("reading the password from Secret %s: %w", s.o.SecretName, err)
		}
		ready.Password = string(sec.Data[s.o.SecretKey])
	}
	// With Ray's token authentication the session's own requests carry
	// the token (the sidecar's extension goes through the token proxy
	// inject runs there).
	token, err := s.rayAuthToken(ctx, head)
	if err != nil {
		return out, err
	}
	sessionURL, stop, err := sessionProxy(ready.DashboardURL, token)
	if err != nil {
		return out, err
	}
	defer stop()
	s.report(ready)

	return s.submitAndWatch(ctx, head, sessionURL)
}

// followLocal serves --local's dashboard proxy, says how to attach, then
// submits and reports as followHead does.
func (s *session) followLocal(ctx context.Context, head *corev1.Pod, dash *Forward, readyMsg string) (Outcome, error) {
	token, err := s.rayAuthToken(ctx, head)
	if err != nil {
		return Outcome{}, err
	}
	proxyURL, sessionURL, stop, err := s.startLocal(dash.Addr(), token)
	if err != nil {
		return Outcome{}, err
	}
	defer stop()
	host := strings.TrimPrefix(proxyURL, "http://")
	if _, port, err := net.SplitHostPort(host); err == nil {
		// The head that replaces this one is served on the same address.
		s.o.LocalPort, _ = strconv.Atoi(port)
	}
	s.report(Event{
		Kind: KindReady, Pod: head.Name, DashboardURL: proxyURL, LocalRoot: s.localRoot(),
		Message: fmt.Sprintf("%s: the Ray dashboard, with paused tasks reachable from this machine, is at %s", readyMsg, proxyURL),
		Hint:    fmt.Sprintf("in VS Code's Ray Distributed Debugger view, add the cluster %s with localRoot %s; or attach ms-python.debugpy to the address each paused task gets below", host, s.localRoot()),
	})
	return s.submitAndWatch(ctx, head, sessionURL)
}

// submitAndWatch submits (when the session does) and reports until the job
// ends.
func (s *session) submitAndWatch(ctx context.Context, head *corev1.Pod, dashboardURL string) (Outcome, error) {
	var out Outcome
	state, err := s.o.NewStateAPI(dashboardURL)
	if err != nil {
		return out, err
	}
	var jobs Jobs
	if s.submits() || s.targetIs("RayJob") {
		if s.o.NewJobs == nil {
			if s.submits() {
				return out, errors.New("debug: no Jobs API client to submit with")
			}
		} else if jobs, err = s.o.NewJobs(dashboardURL); err != nil {
			return out, err
		}
	}
	if s.submits() {
		if out.JobID, err = s.submit(ctx, jobs, head); err != nil {
			return out, err
		}
	}
	return s.watch(ctx, head.Name, state, jobs, out)
}

// ports are the head's dashboard port (the Ray container's port named
// dashboard, else 8265) and the sidecar's code-server port.
func (s *session) ports(head *corev1.Pod) (dash, cs int) {
	dash, cs = inject.DefaultRayDashboardPort, inject.DefaultPort
	for i, c := range head.Spec.Containers {
		for _, p := range c.Ports {
			switch {
			case i == 0 && p.Name == "dashboard":
				dash = int(p.ContainerPort)
			case c.Name == s.o.SidecarName && (p.Name == inject.PortName || len(c.Ports) == 1):
				cs = int(p.ContainerPort)
			}
		}
	}
	return dash, cs
}

// submit sends the entrypoint to the Jobs API and, for a RayJob, sets
// spec.jobId so KubeRay follows the job.
func (s *session) submit(ctx context.Context, jobs Jobs, head *corev1.Pod) (string, error) {
	env := map[string]any{}
	if s.target != nil {
		if y, _, _ := unstructured.NestedString(s.target.Object, "spec", "runtimeEnvYAML"); strings.TrimSpace(y) != "" {
			if err := yaml.Unmarshal([]byte(y), &env); err != nil {
				return "", fmt.Errorf("%s: %s spec.runtimeEnvYAML: %w", s.o.File, ref(s.target), err)
			}
			if env == nil {
				env = map[string]any{}
			}
		}
	}
	if s.o.WorkingDir != "" {
		if old, ok := env["working_dir"]; ok {
			s.report(Event{Kind: KindWarning, Message: fmt.Sprintf("--working-dir %s replaces the runtimeEnvYAML's working_dir %v", s.o.WorkingDir, old)})
		}
		env["working_dir"] = s.o.WorkingDir
	}
	s.ensureDebugpy(ctx, head, env)
	id := ""
	if s.targetIs("RayJob") {
		// KubeRay names the job of a RayJob after it; an InteractiveMode
		// RayJob waits for the user to set spec.jobId.
		id = s.target.GetName() + "-" + time.Now().UTC().Format("20060102-150405")
	}
	sub := Submission{SubmissionID: id, Entrypoint: s.entrypoint(), RuntimeEnv: env}
	jobID, err := jobs.Submit(ctx, sub)
	if err != nil {
		return "", fmt.Errorf("submitting %q: %w", sub.Entrypoint, err)
	}
	if s.targetIs("RayJob") {
		patch := fmt.Appendf(nil, `{"spec":{"jobId":%q}}`, jobID)
		if _, err := s.c.Dynamic.Resource(RayJobs).Namespace(s.c.Namespace).Patch(ctx, s.target.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return "", fmt.Errorf("setting spec.jobId of RayJob %s to the submitted job %s: %w", s.target.GetName(), jobID, err)
		}
	}
	s.report(Event{Kind: KindSubmitted, JobID: jobID, Message: fmt.Sprintf("submitted job %s: %s", jobID, sub.Entrypoint)})
	return jobID, nil
}

// watch reports paused tasks, log lines and the job's end, until the job
// ends, ctx is done, or the head Pod is gone (*headGoneError).
func (s *session) watch(ctx context.Context, head string, state StateAPI, jobs Jobs, out Outcome) (Outcome, error) {
	tracker := newPausedTracker(state, s.podOfIP)
	launched := map[string]*PausedTask{}
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	logged := 0
	var lastErr string
	for {
		paused, resumed, err := tracker.poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return out, context.Cause(ctx)
			}
			if msg := err.Error(); msg != lastErr {
				s.report(Event{Kind: KindWaiting, Message: "the State API did not answer: " + msg})
				lastErr = msg
			}
		}
		var events []Event
		for _, p := range paused {
			e := Event{Kind: KindPaused, Task: p, Pod: p.Pod, JobID: p.JobID, Message: "paused: " + p.String()}
			if s.tunnels != nil {
				s.localPause(ctx, p, &e)
				launched[p.WorkerID] = p
			}
			events = append(events, e)
		}
		for _, p := range resumed {
			if s.tunnels != nil {
				s.tunnels.release(p.IP, p.Port)
				delete(launched, p.WorkerID)
			}
			events = append(events, Event{Kind: KindResumed, Task: p, Pod: p.Pod, JobID: p.JobID, Message: "resumed: " + p.String()})
		}
		if s.tunnels != nil && len(events) > 0 && s.o.WriteLaunch != "" {
			// Written before the events are reported: a paused event's
			// configuration is in the file when the user reads the event.
			var ps []*PausedTask
			for _, p := range launched {
				ps = append(ps, p)
			}
			if err := writeLaunch(s.o.WriteLaunch, ps, s.localRoot()); err != nil {
				s.report(Event{Kind: KindWarning, Message: "warning: " + err.Error()})
			}
		}
		for _, e := range events {
			s.report(e)
		}
		if s.tunnels != nil {
			s.reportTunnelProblems()
		}
		if out.JobID == "" && s.targetIs("RayJob") {
			out.JobID = s.rayJobID(ctx)
		}
		if out.JobID != "" && jobs != nil {
			if s.o.Logs {
				if logs, err := jobs.Logs(ctx, out.JobID); err == nil && len(logs) > logged {
					for _, l := range strings.SplitAfter(logs[logged:], "\n") {
						if l = strings.TrimRight(l, "\n"); l != "" {
							s.report(Event{Kind: KindLog, JobID: out.JobID, Message: l})
						}
					}
					logged = len(logs)
				}
			}
			status, msg, err := jobs.Status(ctx, out.JobID)
			if err == nil && terminal(status) {
				out.JobStatus, out.Message = status, msg
				s.report(Event{Kind: KindFinished, JobID: out.JobID, JobStatus: status, Message: fmt.Sprintf("job %s %s: %s", out.JobID, strings.ToLower(status), msg)})
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			return out, context.Cause(ctx)
		case <-tick.C:
		}
		// The session looks at the head itself rather than rely on its
		// port-forwards ending with it (when a forward ends is the
		// kubelet's and the container runtime's doing).
		if gone := s.headGone(ctx, head); gone != nil {
			for _, p := range tracker.pausedNow() {
				gone.Paused = append(gone.Paused, p.String())
			}
			return out, gone
		}
		for i, f := range s.forwards {
			select {
			case err := <-f.Done():
				nf, rerr := s.reforward(ctx, f, err)
				if rerr != nil {
					return out, rerr
				}
				s.forwards[i] = nf
			default:
			}
		}
	}
}

func terminal(status string) bool {
	switch status {
	case "SUCCEEDED", "FAILED", "STOPPED":
		return true
	}
	return false
}

// rayJobID is the job ID KubeRay reports for the session's RayJob.
func (s *session) rayJobID(ctx context.Context) string {
	rj, err := s.c.Dynamic.Resource(RayJobs).Namespace(s.c.Namespace).Get(ctx, s.target.GetName(), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	id, _, _ := unstructured.NestedString(rj.Object, "status", "jobId")
	return id
}

// podOfIP names the Pod of the session's Ray cluster that has ip (podByIP),
// and its node type from KubeRay's ray.io/node-type label: "head", or
// "worker" for a worker group's Pod.
func (s *session) podOfIP(ctx context.Context, ip string) (string, string) {
	if p := s.podByIP(ctx, ip); p != nil {
		return p.Name, p.Labels["ray.io/node-type"]
	}
	return "", ""
}

// podGone reports whether a Pod read with err is gone for good: not
// found, being deleted, or ended.
func podGone(p *corev1.Pod, err error) bool {
	return apierrors.IsNotFound(err) || err == nil && (p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
}

// reforwardWindow is how long a session tries to bring back a port-forward
// that ended while its Pod still runs (the API server restarting, a
// dropped connection).
const reforwardWindow = time.Minute

// reforward brings back, on the same local port, a port-forward that ended
// with err: the URLs the session printed stay good. It gives up, saying
// why, when the Pod is gone or after reforwardWindow.
func (s *session) reforward(ctx context.Context, f *Forward, err error) (*Forward, error) {
	ended := fmt.Sprintf("the port-forward to Pod %s port %d (local port %d) ended", f.Pod, f.PodPort, f.LocalPort)
	if err != nil {
		ended += fmt.Sprintf(" (%v)", err)
	}
	s.report(Event{Kind: KindWarning, Pod: f.Pod, Message: "warning: " + ended + ": bringing it back on the same local port"})
	deadline := time.Now().Add(reforwardWindow)
	var last error
	for {
		p, gerr := s.c.Core.GetPod(ctx, s.c.Namespace, f.Pod)
		// Every forward of a session is to its head Pod.
		gone := s.headGoneOf(f.Pod, p, gerr)
		switch {
		case gone != nil:
			return nil, gone
		case gerr != nil:
			last = gerr
		default:
			nf, ferr := s.c.PortForward(ctx, f.Pod, f.PodPort, f.LocalPort)
			if ferr == nil {
				s.report(Event{Kind: KindWarning, Pod: f.Pod, Message: fmt.Sprintf("warning: the port-forward to Pod %s port %d is back on %s", f.Pod, f.PodPort, nf.Addr())})
				return nf, nil
			}
			last = ferr
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s, and could not be brought back in %s (the API server connection was lost?): %w", ended, reforwardWindow, last)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(2 * time.Second):
		}
	}
}
