"""Answers to notebook 12's exercises."""

SOLUTIONS = {"12.1": 28_672, "12.2": 966, "12.3": 786_432}

WHY = {
    "12.1": "Every layer keeps, for every token, one key and one value per KV head, each "
    "head_dim elements long. Qwen2.5 7B has 28 layers, 28 query heads but only 4 KV heads "
    "(grouped-query attention: 7 query heads share each KV head), and a head_dim of 128. In "
    "int8 that is 2 x 28 x 4 x 128 x 1 B = 28,672 B per token, what "
    "get_model('qwen2.5-7b').kv_bytes_per_token('int8') returns. Counting the 28 query heads "
    "instead would give 7 times as much.",
    "12.2": "dp+tp on 8 chips is a 2 x 1 x 4 mesh: the 4 KV heads over 'tensor', the batch "
    "over 'data'. Each chip holds a quarter of the weights (909.1 MiB in bfloat16), under a "
    "MiB of working memory (the TPU compiler's figure), and an eighth of every sequence's "
    "cache: 4,096 B per token in int8 (2 x 4 layers x 4 KV heads x 128) x 32,768 tokens / 8 "
    "= 16 MiB. (16,384 MiB - 909.1 MiB - 0.5 MiB) / 16 MiB = 967.1, so 967 sequences fit, "
    "and a batch split over 'data' must be even: 966. The weights take about 57 sequences' "
    "worth of room; the cache takes the rest.",
    "12.3": "act-offload's remat policy keeps one value per decoder layer for the backward "
    "pass, the layer's input, and sends it to pinned host memory as the forward pass makes it. "
    "That input is [batch, seq, d_model] in bfloat16 (the layers compute in bfloat16; only the "
    "master weights are float32), and the batch is split over the 4 chips: 16 / 4 = 4 "
    "sequences x 256 tokens x 128 x 2 B = 256 KiB per layer per chip, x 3 layers = 768 KiB "
    "(786,432 B) to host per step. The backward pass brings the same 768 KiB back. Counting "
    "float32 would double it; forgetting the split over chips would make it 4 times as much.",
}
