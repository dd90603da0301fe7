"""What a measurement is and the device-neutral method that takes one: the outcome of a configuration, the
stopping rule and statistics of timing, what else the machine did meanwhile, and the ceilings kept between runs."""
