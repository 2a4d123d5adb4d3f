"""Training-pair synthesis: sources, math verification, noise filters, chat/math pairs, the mix."""
