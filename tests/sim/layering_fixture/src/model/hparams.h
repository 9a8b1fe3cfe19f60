// fixture: model/ exists so kernels/ including it is an upward include
