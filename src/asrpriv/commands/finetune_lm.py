"""``asrpriv finetune-lm``: train a word-level LM from scratch, or fine-tune one; write model and delta."""

from __future__ import annotations

import click

from asrpriv.commands.options import (FiniteFloat, WholeNumber, check_output_path, common_options,
                                      seed_option)


@click.command("finetune-lm")
@click.option("--train", "train_path", default="-", show_default=True, metavar="FILE",
              help="Training text: plain text (one sentence a line), Kaldi text with --ids, or an "
                   "N-best TSV (rank-1 rows; a 'confidence' column gives per-word confidences).")
@click.option("--valid", "valid_path", default=None, metavar="FILE",
              help="Validation text (same formats): per-epoch loss, LR decay, early stop, best kept.")
@click.option("--ids", is_flag=True, help="Plain-text inputs are Kaldi text (first field = utterance id).")
@click.option("-o", "--output", default=None, metavar="FILE", callback=check_output_path,
              help="The trained model file ('-' = stdout); written atomically. Required, "
                   "except with --by-client.")
@click.option("--init", "init_path", default=None, metavar="FILE",
              help="Fine-tune this model (its vocabulary and architecture are kept).")
@click.option("--delta-out", default=None, metavar="FILE", callback=check_output_path,
              help="With --init: write the delta init - new (paper 001's sign) with its weight "
                   "(number of training words), init_fingerprint and, with --clip, clip_l2.")
@click.option("--by-client", "by_client", default=None, metavar="DIR",
              help="Many-clients mode: fine-tune --init once per client of --train (its 'client' "
                   "column, or --utt2client) and write DIR/<client>.delta.pt each (all or none); "
                   "one process, one model load. Each delta equals the single-client mode's "
                   "(--train CLIENT_PART --delta-out) for the same --seed.")
@click.option("--utt2client", default=None, metavar="FILE",
              help="With --by-client: Kaldi 2-column file utt_id -> client (overrides a TSV "
                   "'client' column; needs --ids for Kaldi text).")
@click.option("--clients", "clients_path", default=None, metavar="LIST",
              help="With --by-client: only these clients (one id a line, e.g. from "
                   "sample-clients); an id without utterances is an error.")
@click.option("--clip", type=FiniteFloat(min=0.0, min_open=True), default=None, metavar="C",
              help="Clip each delta (init - new) to L2 norm <= C over all parameters together "
                   "before it is written (client-level DP, paper 001); recorded as clip_l2.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where the model trains.")
@click.option("--public", is_flag=True,
              help="Declare the training text public (a background corpus): the model records no "
                   "un-noised private data from it. Without it the model is NOT private "
                   "(privacy-report says so); you assert that the text is public.")
@click.option("--client", "client_label", default=None, metavar="LABEL",
              help="With --delta-out: record whose update the delta is (your assertion, like a "
                   "partition label; --by-client records each client's id). A DP round takes one "
                   "delta per client label.")
@click.option("--debug-private-stats", "debug_private", is_flag=True,
              help="With --by-client: also print the clients' word total and how many deltas "
                   "were clipped (un-noised statistics of their data). Not private: debugging only.")
@click.option("--public-valid", is_flag=True,
              help="Declare the --valid text public too (it picks the kept epoch, so it shapes "
                   "the model): without it the model is NOT private whenever --valid is given.")
@click.option("--allow-seeded-test-noise", "allow_seeded", is_flag=True,
              help="Tests only: accept an --init model made with seeded (not private) noise.")
@click.option("--arch", type=click.Choice(["transformer", "lstm"]), default="transformer",
              show_default=True, help="Architecture of a new model.")
@click.option("--vocab-size", type=WholeNumber(min=0), default=0, show_default=True,
              help="New model: keep at most this many words, specials included (0 = no limit).")
@click.option("--vocab", "vocab_path", default=None, metavar="FILE",
              help="New model: exactly these words (one a line, first field; an ARPA file's "
                   "1-grams) plus <unk> <s> </s>; --vocab-size/--min-count are then ignored. "
                   "Gives an NNLM the vocabulary of an n-gram LM it is mixed or compared with.")
@click.option("--min-count", type=WholeNumber(min=1), default=2, show_default=True,
              help="New model: words seen fewer times become <unk> (so <unk> is trained).")
@click.option("--emb-dim", type=WholeNumber(min=1), default=None,
              help="Embedding size [transformer 256, lstm 512].")
@click.option("--ffn-dim", type=WholeNumber(min=1), default=None, help="Transformer feed-forward size [1024].")
@click.option("--heads", type=WholeNumber(min=1), default=None, help="Transformer attention heads [4].")
@click.option("--hidden-dim", type=WholeNumber(min=1), default=None, help="LSTM hidden size [512].")
@click.option("--layers", type=WholeNumber(min=1), default=None,
              help="Transformer blocks [3] or LSTM layers [2].")
@click.option("--dropout", type=FiniteFloat(0.0, 1.0, max_open=True), default=None,
              help="Dropout probability [0.1].")
@click.option("--tie-embeddings/--no-tie-embeddings", default=None,
              help="Share the input embedding and output weight [no].")
@click.option("--recipe", type=click.Choice(["server", "client-001"]), default="server",
              show_default=True,
              help="server: Adam lr 1e-3, 10 epochs, batch 32 by tokens, token-mean loss, grad-norm clip 1.0; "
                   "client-001: SGD lr 1.0, 1 epoch, batch 8 sentences, Eq. 2 per-utterance loss, no clip. "
                   "The options below override it.")
@click.option("--optimizer", type=click.Choice(["sgd", "adam"]), default=None, help="Optimizer.")
@click.option("--lr", type=FiniteFloat(min=0.0, min_open=True), default=None, help="Learning rate.")
@click.option("--epochs", type=WholeNumber(min=1), default=None, help="Epochs (passes over --train).")
@click.option("--batch-size", type=WholeNumber(min=1), default=None, help="Sentences per batch.")
@click.option("--batch-by", type=click.Choice(["sentences", "tokens"]), default=None,
              help="sentences: every batch has --batch-size sentences (001's n_b); tokens: as many "
                   "batches, cut to equal padded area (--batch-size sentences on average, less padding).")
@click.option("--loss-norm", type=click.Choice(["utterance", "token"]), default=None,
              help="utterance: mean over sentences of per-sentence mean NLL (001 Eq. 2-4); "
                   "token: mean NLL over all predicted tokens.")
@click.option("--max-grad-norm", type=FiniteFloat(min=0.0), default=None,
              help="Clip the gradient's L2 norm (0 = off).")
@click.option("--confidence", default="none", show_default=True, metavar="none|hard:C|utterance|token",
              help="Confidence loss of paper 001: hard:C drops sentences whose mean word confidence "
                   "is < C (Eq. 2 on the rest); utterance weights each sentence by it (Eq. 3); "
                   "token weights each word by its own (Eq. 4). Needs a TSV 'confidence' column.")
@click.option("--train-only", type=click.Choice(["all", "output"]), default="all", show_default=True,
              help="output: train the output layer only (seed 003); the rest stays bitwise unchanged.")
@click.option("--lr-decay", type=FiniteFloat(0.0, 1.0, min_open=True), default=0.5, show_default=True,
              help="With --valid: multiply the LR by this when validation loss does not improve.")
@click.option("--patience", type=WholeNumber(min=0), default=2, show_default=True,
              help="With --valid: stop after this many epochs without improvement.")
@click.option("--max-words", type=WholeNumber(min=1), default=1000, show_default=True,
              help="Refuse (FILE:LINE) a sentence longer than this many words (training cost "
                   "grows with the square of a sentence's length).")
@click.option("--threads", type=WholeNumber(min=0), default=0, show_default=True,
              help="CPU threads for torch (0 = OMP_NUM_THREADS if set, else min(CPUs, 4)). "
                   "Runs are bit-for-bit repeatable at a fixed thread count.")
@seed_option("Seed for initialisation, batch order and dropout (bit-for-bit repeatable on CPU).")
@common_options
def finetune_lm(train_path, valid_path, ids, output, init_path, delta_out, by_client, utt2client,
                clients_path, clip, device, arch, vocab_size, vocab_path,
                min_count, emb_dim, ffn_dim, heads, hidden_dim, layers, dropout, tie_embeddings,
                recipe, optimizer, lr, epochs, batch_size, batch_by, loss_norm, max_grad_norm, confidence,
                train_only, lr_decay, patience, max_words, threads, seed, client_label,
                debug_private, public, public_valid, allow_seeded):
    """Train a word-level neural LM (Transformer or LSTM), or fine-tune one with --init.

    Sentences are scored ARPA-style: <s> is context, every word and </s> are predicted.
    Losses are natural-log cross-entropies; the progress bar (terminal only) shows the running
    training loss and perplexity.

    \b
    Examples:
      asrpriv finetune-lm --ids --train train_text --valid dev_text -o base.pt
      asrpriv finetune-lm --init base.pt --train client.tsv --recipe client-001 \\
          --confidence token -o client.pt --delta-out client.delta.pt
      asrpriv finetune-lm --init global.pt --train adapt.tsv --recipe client-001 \\
          --by-client deltas/ --clients round.txt --clip 0.5 --seed 1
    """
    from asrpriv.federated.finetune import FinetuneRequest
    from asrpriv.federated.finetune_step import finetune_lm as finetune_step
    from asrpriv.commands.options import info, warn
    from asrpriv.progress import Progress

    request = FinetuneRequest(
        train_path=train_path, valid_path=valid_path, ids=ids, output=output, init_path=init_path,
        delta_out=delta_out, arch=arch, vocab_size=vocab_size, min_count=min_count, vocab_path=vocab_path,
        model_options={"emb_dim": emb_dim, "ffn_dim": ffn_dim, "heads": heads,
                       "hidden_dim": hidden_dim, "layers": layers, "dropout": dropout,
                       "tie_embeddings": tie_embeddings},
        recipe=recipe,
        overrides={"optimizer": optimizer, "lr": lr, "epochs": epochs, "batch_size": batch_size,
                   "batch_by": batch_by, "loss_norm": loss_norm, "max_grad_norm": max_grad_norm},
        confidence=confidence, train_only=train_only, lr_decay=lr_decay, patience=patience,
        threads=threads, seed=seed, max_words=max_words, device=device, clip=clip,
        by_client=by_client, utt2client=utt2client, clients_path=clients_path, public=public,
        public_valid=public_valid, allow_seeded=allow_seeded, client=client_label,
        debug_private=debug_private)
    finetune_step(request, progress=lambda label, total: Progress(label, total),
                  talk=info, warn=warn)
