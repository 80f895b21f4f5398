"""The paper, rerun: the grid of pretraining variants and fine-tuning runs behind Tables 5, 6 and 7 of the BERT
paper, its budgets, running it with resume, and the report (`reproduce.reproduce_paper`)."""
