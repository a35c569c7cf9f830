"""Word-level neural language models: vocabulary, models, model files, training, perplexity.

Import the submodules you need (``asrpriv.nnlm.modelfile``, ``asrpriv.nnlm.train``...); this
package's ``__init__`` imports nothing, so that importing it does not pull in torch.
"""
