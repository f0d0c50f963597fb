// Command redlock-bench measures our Redlock side by side with
// go-redsync/redsync v4 and with the floor (one node, SET NX PX +
// compare-and-delete), in one run on the same local redis-server nodes,
// and prints the ratios. It lives outside redlock/ because it starts its
// nodes with the harness's cluster package, which the lock library does
// not depend on.
//
//	go run ./cmd/redlock-bench       (or: make bench)
//
// Two workloads, each with -workers goroutines sharing one lock client per
// contender (as a service shares one): "uncontended", where every worker
// locks and releases its own key, and "hot-key", where all workers take
// turns on one key (redsync retrying every 1 ms, ours woken on release).
// The contenders run in alternation for -rounds rounds so that a noisy
// machine hurts them alike; throughput is the median over rounds and
// latency percentiles are over all rounds. Only ratios from one run mean
// anything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"splitbrain/cluster"
	"splitbrain/cluster/local"
	"splitbrain/redlock"
)

type config struct {
	nodes, workers, rounds int
	duration, ttl          time.Duration
	retryDelay             time.Duration
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nodes, "nodes", 5, "lock nodes (redis-server processes)")
	flag.IntVar(&cfg.workers, "workers", 8, "concurrent workers per contender")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; contenders alternate within each")
	flag.DurationVar(&cfg.duration, "duration", 2*time.Second, "measuring time per contender and round")
	flag.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "lock TTL")
	flag.DurationVar(&cfg.retryDelay, "redsync-retry", time.Millisecond, "redsync's retry delay on the hot key")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// contender is one lock implementation: cycle makes one acquire+release on
// key (hot: waiting for the lock; otherwise one attempt).
type contender struct {
	name  string
	cycle func(ctx context.Context, key string, hot bool) error
}

func run(cfg config) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "splitbrain-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cl, err := local.Start(ctx, cluster.Config{Nodes: cfg.nodes, Dir: dir})
	if err != nil {
		return err
	}
	defer cl.Close(context.Background())

	// Every contender gets its own connections, with the same go-redis
	// options, and the same per-node timeout: redsync's is
	// TimeoutFactor·TTL, 0.05 by default.
	nodeTimeout := cfg.ttl / 20
	clients := func() []*redis.Client {
		var cs []*redis.Client
		for _, n := range cl.Nodes() {
			cs = append(cs, redis.NewClient(redlock.ClientOptions(n.Addr(), cl.Password())))
		}
		return cs
	}
	var all []*redis.Client
	defer func() {
		for _, c := range all {
			_ = c.Close()
		}
	}()

	oursClients := clients()
	all = append(all, oursClients...)
	locker, err := redlock.New(oursClients, redlock.Options{NodeTimeout: nodeTimeout})
	if err != nil {
		return err
	}
	ours := contender{"ours", func(ctx context.Context, key string, hot bool) error {
		lock := locker.TryLock
		if hot {
			lock = locker.Lock
		}
		lease, err := lock(ctx, key, cfg.ttl)
		if err != nil {
			return err
		}
		_, err = locker.Release(ctx, lease)
		return err
	}}

	rsClients := clients()
	all = append(all, rsClients...)
	var pools []rsredis.Pool
	for _, c := range rsClients {
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	rsync := contender{"redsync", func(ctx context.Context, key string, hot bool) error {
		opts := []redsync.Option{redsync.WithExpiry(cfg.ttl), redsync.WithTries(1)}
		if hot {
			opts = []redsync.Option{redsync.WithExpiry(cfg.ttl), redsync.WithTries(1 << 30), redsync.WithRetryDelay(cfg.retryDelay)}
		}
		m := rs.NewMutex(key, opts...)
		if err := m.LockContext(ctx); err != nil {
			return err
		}
		if ok, err := m.UnlockContext(ctx); !ok {
			return fmt.Errorf("unlock: %v", err)
		}
		return nil
	}}

	floorClient := clients()[0]
	all = append(all, floorClient)
	floor := contender{"floor", func(ctx context.Context, key string, hot bool) error {
		value := fmt.Sprint(time.Now().UnixNano())
		for {
			ok, err := floorClient.SetNX(ctx, key, value, cfg.ttl).Result()
			if err != nil {
				return err
			}
			if ok {
				break
			}
			if !hot {
				return fmt.Errorf("%s held", key)
			}
			time.Sleep(cfg.retryDelay)
		}
		return compareAndDelete.Run(ctx, floorClient, []string{key}, value).Err()
	}}

	contenders := []contender{ours, rsync, floor}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%s, %d CPUs, load average at start %s\n", runtime.Version(), runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("%d local redis-server nodes (floor: node 1 alone), %d workers, %d rounds × %v per contender and workload\n",
		cfg.nodes, cfg.workers, cfg.rounds, cfg.duration)
	fmt.Printf("ttl %v, per-node timeout %v (redsync: TimeoutFactor 0.05), go-redis options redlock.ClientOptions for all; redsync retry delay %v on the hot key\n\n",
		cfg.ttl, nodeTimeout, cfg.retryDelay)

	workloads := []string{"uncontended", "hot-key"}
	results := map[string]map[string]*stats{}
	for _, wl := range workloads {
		results[wl] = map[string]*stats{}
		for _, c := range contenders {
			results[wl][c.name] = &stats{}
		}
		for r := range cfg.rounds {
			for _, c := range contenders {
				measure(ctx, cfg, c, wl, r, results[wl][c.name])
			}
		}
	}

	fmt.Println("ops/s: acquire+release cycles per second (hot-key: hand-offs); p50, p99: one cycle, waiting included")
	fmt.Printf("%-12s %-8s %10s %10s %10s %8s\n", "workload", "lock", "ops/s", "p50", "p99", "errors")
	for _, wl := range workloads {
		for _, c := range contenders {
			s := results[wl][c.name]
			fmt.Printf("%-12s %-8s %10.0f %10v %10v %8d\n", wl, c.name, s.rate(), s.pct(50).Round(time.Microsecond), s.pct(99).Round(time.Microsecond), s.errs)
		}
	}
	u, h := results["uncontended"], results["hot-key"]
	fmt.Println()
	check := func(what string, got, target float64, higherBetter bool) {
		ok := got >= target
		if !higherBetter {
			ok = got <= target
		}
		verdict := "met"
		if !ok {
			verdict = "MISSED"
		}
		cmp := "≥"
		if !higherBetter {
			cmp = "≤"
		}
		fmt.Printf("%-52s %6.2f×  (target %s %.1f×: %s)\n", what, got, cmp, target, verdict)
	}
	check("uncontended throughput, ours / redsync", u["ours"].rate()/u["redsync"].rate(), 1.5, true)
	check("uncontended p50 latency, ours / redsync", ratio(u["ours"].pct(50), u["redsync"].pct(50)), 1, false)
	check("hot-key hand-offs/s, ours / redsync (1 ms retry)", h["ours"].rate()/h["redsync"].rate(), 2, true)
	fmt.Printf("%-52s %6.2f×\n", "uncontended throughput, ours / floor", u["ours"].rate()/u["floor"].rate())
	fmt.Printf("%-52s %6.2f×\n", "uncontended throughput, redsync / floor", u["redsync"].rate()/u["floor"].rate())
	return nil
}

var compareAndDelete = redis.NewScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

type stats struct {
	rates []float64
	lat   []time.Duration
	errs  int
}

func (s *stats) rate() float64 {
	r := slices.Clone(s.rates)
	slices.Sort(r)
	return r[len(r)/2]
}

func (s *stats) pct(p int) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	return s.lat[min(len(s.lat)-1, len(s.lat)*p/100)]
}

// measure runs one contender on one workload for cfg.duration.
func measure(ctx context.Context, cfg config, c contender, workload string, round int, s *stats) {
	hot := workload == "hot-key"
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ok int
	start := time.Now()
	stop := start.Add(cfg.duration)
	for w := range cfg.workers {
		key := fmt.Sprintf("bench:%s:%s:%d:%d", workload, c.name, round, w)
		if hot {
			key = fmt.Sprintf("bench:%s:%s:%d", workload, c.name, round)
		}
		wg.Go(func() {
			var lat []time.Duration
			var n, errs int
			for time.Now().Before(stop) {
				t := time.Now()
				if err := c.cycle(ctx, key, hot); err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t))
				n++
			}
			mu.Lock()
			ok += n
			s.errs += errs
			s.lat = append(s.lat, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	s.rates = append(s.rates, float64(ok)/time.Since(start).Seconds())
}
