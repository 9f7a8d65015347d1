package kubernetes

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The driver speaks to the apiserver through client-go's REST client with a
// scheme of its own that knows only the types it reads (apps/v1 workloads,
// autoscaling/v1 Scale, autoscaling/v2 HPA). client-go's typed clients would
// register every API group of Kubernetes through their shared scheme, and add
// 26 MB to reaper's binary where this adds under 15 (docs/kubernetes.md).
var (
	scheme     = runtime.NewScheme()
	codecs     serializer.CodecFactory
	paramCodec runtime.ParameterCodec
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs = serializer.NewCodecFactory(scheme)
	paramCodec = runtime.NewParameterCodec(scheme)
}

// client is the few calls the driver makes.
type client struct {
	apps, autoscaling *rest.RESTClient
}

func newClient(rc *rest.Config) (*client, error) {
	apps, err := restFor(rc, appsv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	as, err := restFor(rc, autoscalingv2.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &client{apps: apps, autoscaling: as}, nil
}

func restFor(rc *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// resource is the kind's resource name.
func resource(kind string) string {
	if kind == KindStatefulSet {
		return "statefulsets"
	}
	return "deployments"
}

// list lists the workloads of a kind in a namespace ("": all).
func (c *client) list(ctx context.Context, kind, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	var out runtime.Object = &appsv1.DeploymentList{}
	if kind == KindStatefulSet {
		out = &appsv1.StatefulSetList{}
	}
	err := c.apps.Get().Namespace(ns).Resource(resource(kind)).VersionedParams(&opts, paramCodec).Do(ctx).Into(out)
	return out, err
}

// watch watches the workloads of a kind in a namespace ("": all).
func (c *client) watch(ctx context.Context, kind, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	r := c.apps.Get().Namespace(ns).Resource(resource(kind)).VersionedParams(&opts, paramCodec)
	if opts.TimeoutSeconds != nil {
		r = r.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return r.Watch(ctx)
}

// get reads one workload into out (a Deployment or a StatefulSet).
func (c *client) get(ctx context.Context, r ref, out runtime.Object) error {
	return c.apps.Get().Namespace(r.namespace).Resource(resource(r.kind)).Name(r.name).Do(ctx).Into(out)
}

// getScale reads a workload's scale subresource.
func (c *client) getScale(ctx context.Context, r ref) (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{}
	err := c.apps.Get().Namespace(r.namespace).Resource(resource(r.kind)).Name(r.name).SubResource("scale").Do(ctx).Into(out)
	return out, err
}

// updateScale writes a workload's scale subresource (PUT, with the
// resourceVersion of sc: a change since is a conflict).
func (c *client) updateScale(ctx context.Context, r ref, sc *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{}
	err := c.apps.Put().Namespace(r.namespace).Resource(resource(r.kind)).Name(r.name).SubResource("scale").Body(sc).Do(ctx).Into(out)
	return out, err
}

// listHPAs lists the HorizontalPodAutoscalers of a namespace.
func (c *client) listHPAs(ctx context.Context, ns string) (*autoscalingv2.HorizontalPodAutoscalerList, error) {
	out := &autoscalingv2.HorizontalPodAutoscalerList{}
	err := c.autoscaling.Get().Namespace(ns).Resource("horizontalpodautoscalers").Do(ctx).Into(out)
	return out, err
}
