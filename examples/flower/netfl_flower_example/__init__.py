"""A PyTorch Flower app (flwr 1.38 Message API) that netfl runs on a simulated 5G cell."""
