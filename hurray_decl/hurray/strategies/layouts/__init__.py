"""One module per layout family (DIGEST § 5.4): each registers the valid strategy of its layout
rows and owns their rule-labelled mutants."""
