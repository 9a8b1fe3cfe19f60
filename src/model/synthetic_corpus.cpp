#include "model/synthetic_corpus.h"

namespace duet::model {

std::string_view synthetic_corpus() {
    return R"(Once upon a time there was a little girl named Lily. She lived in a small house near the
forest with her mother and her father. Every morning she went outside to play in the garden. One day she
saw a big red ball under a tree. She wanted to play with it, so she ran to the tree and picked it up.
The ball was shiny and new. Lily was very happy. She said, "Mom, look what I found!" Her mother smiled and
said, "That is a nice ball. You can play with it, but you have to share it with your friends."
Lily played with the ball all day. In the evening her friend Tom came to the house. He wanted to play too.
At first Lily did not want to share, but then she remembered what her mother said. She gave the ball to
Tom and they played together until the sun went down. They laughed and ran and had a lot of fun.
When it was time to go home, Tom said, "Thank you for sharing your ball with me." Lily felt warm inside.
She learned that sharing makes everyone happy, and that a good friend is better than any toy.
The next day the sky was grey and it started to rain. Lily looked out of the window and felt sad because
she could not go outside. Her father came into the room and sat next to her. He told her a story about a
brave little bird who flew over the mountains and the sea to find a new home. The bird was tired and
cold, but it never gave up. At the end of the story the bird found a warm nest in an old tree by a river.
Lily liked the story very much. She asked her father to tell it again, and he did.
The engine reads the model, splits the text into tokens and computes the next word one step at a time.
Each layer of the network has attention and a feed forward block; the weights are stored in a file on
the disk and the memory of the computer holds them while the program is running. A fast program moves
the data only once and keeps every part of the machine busy. We measure the time of the first token and
the time between tokens, and we write the numbers in a report so that other people can check them.
What is the capital of France? The capital of France is Paris. How many days are in a week? There are
seven days in a week: Monday, Tuesday, Wednesday, Thursday, Friday, Saturday and Sunday. The numbers
one, two, three, four, five, six, seven, eight, nine and ten are small numbers; 100 and 2024 are bigger.
I think that you should always be kind to people and animals. They are happy when you help them, and you
will be happy too. Please answer the question in a short sentence. Yes, I can help you with that.
)";
}

}  // namespace duet::model
