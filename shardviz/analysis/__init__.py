"""Model in, model out, no jax: findings (:mod:`.detect`), cost and time on a target
(:mod:`.estimate`), why a collective exists (:mod:`.collective_why`, :mod:`.sharding_origins`).
"""
