"""A PPO learner that knows no environment: an MLP actor-critic, rollout buffers with GAE, the
clipped PPO update with its gradients summed over thread shards, and atomic checkpoints."""
