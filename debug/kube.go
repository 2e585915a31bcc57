package debug

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// FieldManager is the field manager of every server-side apply a session
// makes.
const FieldManager = "imagectl-debug"

// Ray's API group and the resources a session reads.
var (
	RayJobs     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
	RayClusters = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	RayServices = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}
)

// KubeFlags are what the user says about the cluster, as kubectl takes
// them.
type KubeFlags struct {
	// Kubeconfig is a kubeconfig file; "" follows the loading rules
	// (KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context is a kubeconfig context; "" the current one.
	Context string
	// Namespace; "" the context's namespace, else "default".
	Namespace string
}

// Cluster is a connection to one Kubernetes cluster, in one namespace.
type Cluster struct {
	Config    *rest.Config
	Namespace string
	// NamespaceFrom says where Namespace came from: "flag", "context" or
	// "default".
	NamespaceFrom string
	Core          CoreAPI
	Dynamic       dynamic.Interface
	Mapper        RESTMapper
	// Host is the API server's URL, for messages.
	Host string

	warnings *apiWarnings
}

// OnWarning sends the API server's warnings on the requests c makes to f,
// once per object and text: object is the Kind/name an apply, get or
// delete of one object was for, "" for other requests. Without it (and before it) they are dropped;
// client-go's default writes each as a klog line on stderr.
func (c *Cluster) OnWarning(f func(object, text string)) {
	if c.warnings == nil {
		return
	}
	c.warnings.mu.Lock()
	defer c.warnings.mu.Unlock()
	c.warnings.to = f
}

// apiWarnings is the rest.Config's warning handler of a Cluster: the
// Warning headers (code 299) the API server adds to an answer, such as
// PodSecurity's "would violate PodSecurity ..." where a namespace warns,
// or a deprecated API version.
type apiWarnings struct {
	mu   sync.Mutex
	to   func(object, text string)
	seen map[[2]string]bool
}

// warnedObject is the context key of the object a request is for.
type warnedObject struct{}

// withWarnedObject names the object ctx's requests are for in the
// warnings they bring.
func withWarnedObject(ctx context.Context, object string) context.Context {
	return context.WithValue(ctx, warnedObject{}, object)
}

func (w *apiWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	object, _ := ctx.Value(warnedObject{}).(string)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.to == nil || w.seen[[2]string{object, text}] {
		return
	}
	if w.seen == nil {
		w.seen = map[[2]string]bool{}
	}
	w.seen[[2]string{object, text}] = true
	w.to(object, text)
}

// Connect loads the kubeconfig the way kubectl does and makes the clients.
// It does not contact the cluster.
func Connect(f KubeFlags) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig: set KUBECONFIG, pass --kubeconfig, or write ~/.kube/config")
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c := &Cluster{Config: cfg, Host: cfg.Host, Namespace: f.Namespace, NamespaceFrom: "flag"}
	if c.Namespace == "" {
		ns, explicit, err := cc.Namespace()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: the context's namespace: %w", err)
		}
		c.Namespace, c.NamespaceFrom = ns, "context"
		if !explicit && ns == "default" {
			c.NamespaceFrom = "default"
		}
	}
	cfg.UserAgent = "imagectl-debug"
	c.warnings = &apiWarnings{}
	cfg.WarningHandlerWithContext = c.warnings
	if c.Core, err = newRESTCore(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	if c.Mapper, err = newResourceMapper(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes discovery for %s: %w", cfg.Host, err)
	}
	return c, nil
}
