"""asrpriv's federated rounds as a Flower app (optional: ``pip install 'asrpriv[flower]'``).

Nothing in :mod:`asrpriv` imports this package. The client and the server run asrpriv's own
library code: :func:`asrpriv.federated.client.client_update` on each client, and
:func:`asrpriv.federated.aggregate.run_round` (FedAvg / FedAdam of paper 001 Eq. 5-8, the
Gaussian mechanism on the clipped aggregate before the optimizer) on the server, with the
clients of each round Poisson-sampled by :func:`asrpriv.federated.sampling.poisson_sample`
exactly as ``asrpriv sample-clients`` does. Flower's own FedAdam (tau outside the square root,
its bias correction folded into the step with t = round + 1) and its server-side DP wrapper
(noise added to the wrapped strategy's output, i.e. after the Adam step) differ from paper 001
and from our DP design, so they are not used.
"""
