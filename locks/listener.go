package locks

// listening is base used as its documentation asks, with a connection
// state listener whose user stops believing on SUSPENDED or LOST: the same
// driver run with "listener", the same servers, shape, token and liveness
// as base — only the name, what it is and when the belief ends differ.
func listening(base *Kind, name, about, belief string) *Kind {
	k := *base
	k.Name, k.About, k.Belief = name, about, belief
	return &k
}
