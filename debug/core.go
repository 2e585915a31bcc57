package debug

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// CoreAPI is the typed part of the Kubernetes API a session uses: Pods,
// Secrets, Events and container logs of core/v1, SelfSubjectAccessReviews,
// and the URLs of a Pod's exec and portforward subresources.
//
// Connect's implementation is two REST clients whose scheme holds only
// core/v1 and authorization/v1, asking for protobuf as client-go's typed
// clients do (logs are text). client-go's typed clientset (and its
// discovery client) register every API group of Kubernetes, about 35 MB
// of imagectl's binary (arch_test.go's TestCLILinks keeps them out).
type CoreAPI interface {
	ListPods(ctx context.Context, namespace, labelSelector string) (*corev1.PodList, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
	ListEvents(ctx context.Context, namespace, fieldSelector string) (*corev1.EventList, error)
	// PodLogs streams a container's log.
	PodLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)
	ReviewAccess(ctx context.Context, r *authv1.SelfSubjectAccessReview) (*authv1.SelfSubjectAccessReview, error)
	// PodSubresourceURL is the URL of subresource ("exec", "portforward")
	// of a Pod, with opts (nil for none) as its query.
	PodSubresourceURL(namespace, pod, subresource string, opts runtime.Object) *url.URL
}

var (
	coreScheme = runtime.NewScheme()
	coreCodecs = serializer.NewCodecFactory(coreScheme)
	coreParams = runtime.NewParameterCodec(coreScheme)
)

func init() {
	// corev1 registers metav1's Status and option types in its group
	// version too.
	utilruntime.Must(corev1.AddToScheme(coreScheme))
	utilruntime.Must(authv1.AddToScheme(coreScheme))
}

// restCore is the CoreAPI of a live cluster.
type restCore struct {
	core, authz *rest.RESTClient
}

func newRESTCore(cfg *rest.Config) (*restCore, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion = apiPath, &gv
		c.NegotiatedSerializer = coreCodecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	rc := &restCore{}
	if rc.core, err = client("/api", corev1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if rc.authz, err = client("/apis", authv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return rc, nil
}

func (c *restCore) ListPods(ctx context.Context, ns, sel string) (*corev1.PodList, error) {
	l := &corev1.PodList{}
	err := c.core.Get().UseProtobufAsDefault().Namespace(ns).Resource("pods").VersionedParams(&metav1.ListOptions{LabelSelector: sel}, coreParams).Do(ctx).Into(l)
	return l, err
}

func (c *restCore) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := c.core.Get().UseProtobufAsDefault().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(p)
	return p, err
}

func (c *restCore) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := c.core.Get().UseProtobufAsDefault().Namespace(ns).Resource("secrets").Name(name).Do(ctx).Into(s)
	return s, err
}

func (c *restCore) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := c.core.Get().UseProtobufAsDefault().Resource("namespaces").Name(name).Do(ctx).Into(ns)
	return ns, err
}

func (c *restCore) ListEvents(ctx context.Context, ns, sel string) (*corev1.EventList, error) {
	l := &corev1.EventList{}
	err := c.core.Get().UseProtobufAsDefault().Namespace(ns).Resource("events").VersionedParams(&metav1.ListOptions{FieldSelector: sel}, coreParams).Do(ctx).Into(l)
	return l, err
}

func (c *restCore) PodLogs(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.core.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").VersionedParams(opts, coreParams).Stream(ctx)
}

func (c *restCore) ReviewAccess(ctx context.Context, r *authv1.SelfSubjectAccessReview) (*authv1.SelfSubjectAccessReview, error) {
	out := &authv1.SelfSubjectAccessReview{}
	err := c.authz.Post().UseProtobufAsDefault().Resource("selfsubjectaccessreviews").Body(r).Do(ctx).Into(out)
	return out, err
}

func (c *restCore) PodSubresourceURL(ns, pod, sub string, opts runtime.Object) *url.URL {
	req := c.core.Post().Namespace(ns).Resource("pods").Name(pod).SubResource(sub)
	if opts != nil {
		req = req.VersionedParams(opts, coreParams)
	}
	return req.URL()
}

// discoveryTimeout bounds the reading of one group version's resources.
const discoveryTimeout = 30 * time.Second

// RESTMapper finds the resource that serves a kind.
type RESTMapper interface {
	RESTMapping(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// resourceMapper maps a kind by reading its group version's resource list
// (GET /api/v1 or /apis/GROUP/VERSION) once per session, as kubectl's
// deferred discovery does for the groups it needs, without reading every
// group the server has. A group version the server did not know is asked
// again next time: a CRD may have been installed since.
type resourceMapper struct {
	rest *rest.RESTClient
	host string

	mu   sync.Mutex
	seen map[schema.GroupVersion]*metav1.APIResourceList
}

func newResourceMapper(cfg *rest.Config) (*resourceMapper, error) {
	// Requests use absolute paths; the group version only gives the
	// client a decoder for the server's Status of a refusal.
	c := rest.CopyConfig(cfg)
	c.APIPath, c.GroupVersion = "/api", &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = coreCodecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &resourceMapper{rest: rc, host: strings.TrimSuffix(cfg.Host, "/"), seen: map[schema.GroupVersion]*metav1.APIResourceList{}}, nil
}

func (m *resourceMapper) resources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.seen[gv]; ok {
		return l, nil
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	res := m.rest.Get().AbsPath(path).Do(ctx)
	err := res.Error() // the server's Status of a refusal, decoded
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery of %s at %s%s: %w", gv, m.host, path, err)
	}
	// Decoded as plain JSON: /api/v1's list carries no apiVersion.
	b, _ := res.Raw()
	l := &metav1.APIResourceList{}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("discovery of %s at %s%s: %w", gv, m.host, path, err)
	}
	m.seen[gv] = l
	return l, nil
}

// RESTMapping implements RESTMapper for one or more versions of gk (the
// first served wins).
func (m *resourceMapper) RESTMapping(ctx context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	for _, v := range versions {
		if v == "" {
			continue
		}
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		l, err := m.resources(ctx, gv)
		if err != nil {
			return nil, err
		}
		if l == nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Kind != gk.Kind || strings.Contains(r.Name, "/") {
				continue // a subresource (pods/log) carries its parent's kind
			}
			scope := meta.RESTScopeRoot
			if r.Namespaced {
				scope = meta.RESTScopeNamespace
			}
			return &meta.RESTMapping{
				Resource:         gv.WithResource(r.Name),
				GroupVersionKind: gv.WithKind(r.Kind),
				Scope:            scope,
			}, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}
