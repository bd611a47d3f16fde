"""A PPO learner that knows no environment: an MLP actor-critic, rollout buffers with GAE, the
clipped PPO update with its gradients summed over thread shards, and atomic checkpoints.

A study supplies the environment side (how its envs are played into the buffers, what a network
observes, how it is exported). Runs are deterministic for a given seed and thread count: torch runs
single-threaded per shard with `use_deterministic_algorithms` (`shards.deterministic_torch`), every
random draw comes from a seeded generator, and the shards' gradients are summed in a fixed order.
"""
