package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/redlock"
)

// Example takes a lock on five independent Redis masters, shows that a
// second attempt finds it held, then runs a critical section with Do, which
// waits for the lock, keeps the lease alive while the function runs and
// releases it afterwards. The fencing tokens are what the protected
// resource should check: it must refuse a token lower than one it has seen.
func Example() {
	addrs, password := exampleNodes() // five redis-server processes
	var nodes []*redis.Client
	for _, addr := range addrs {
		c := redis.NewClient(redlock.ClientOptions(addr, password))
		defer c.Close()
		nodes = append(nodes, c)
	}
	locker, err := redlock.New(nodes, redlock.Options{Fencing: redlock.FenceTwoRound})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	lease, err := locker.TryLock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A majority is what a grant takes; how many more answered in time
	// depends on the machine.
	fmt.Printf("granted by a majority of %d nodes: %v, token %d\n", locker.Nodes(), len(lease.Granted) > locker.Nodes()/2, lease.Token)

	if _, err := locker.TryLock(ctx, "invoice:42", 10*time.Second); errors.Is(err, redlock.ErrNotAcquired) {
		fmt.Println("second attempt: not acquired")
	}
	if _, err := locker.Release(ctx, lease); err != nil {
		fmt.Println(err)
	}

	err = locker.Do(ctx, "invoice:42", 2*time.Second, func(ctx context.Context, lease *redlock.Lease) error {
		// Work on the protected resource here, passing lease.Token along,
		// and stop when ctx ends: the lease is about to run out.
		fmt.Printf("in Do, token %d\n", lease.Token)
		return nil
	})
	fmt.Println("Do:", err)
	// Output:
	// granted by a majority of 5 nodes: true, token 1
	// second attempt: not acquired
	// in Do, token 2
	// Do: <nil>
}

// The example's nodes are started on first use and stopped by TestMain.
var example struct {
	once     sync.Once
	cluster  *local.Cluster
	addrs    []string
	password string
	dir      string
}

func exampleNodes() ([]string, string) {
	example.once.Do(func() {
		dir, err := os.MkdirTemp("", "redlock-example-")
		if err != nil {
			panic(err)
		}
		example.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := local.Start(ctx, cluster.Config{Nodes: 5, Dir: dir})
		if err != nil {
			panic(fmt.Sprintf("starting the example's redis-server nodes: %v", err))
		}
		example.cluster = cl
		example.password = cl.Password()
		for _, n := range cl.Nodes() {
			example.addrs = append(example.addrs, n.Addr())
		}
	})
	return example.addrs, example.password
}

func TestMain(m *testing.M) {
	code := m.Run()
	if example.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := example.cluster.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the example's nodes:", err)
			code = 1
		}
		cancel()
	}
	if example.dir != "" {
		_ = os.RemoveAll(example.dir)
	}
	os.Exit(code)
}
