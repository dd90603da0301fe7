"""What a long piece of work shows a person on stderr while it goes on (:mod:`tuner.console.live_line`)."""
